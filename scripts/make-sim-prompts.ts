// Regenerates media/sim-scripts/prompts/: what simulated phones say that no caller fixture does (a
// phone menu and its answers, an answering machine's greeting and its beep), spoken by the flite
// voices as 8 kHz μ-law WAV made with our own resampler and G.711 codec. flite gives the same audio
// for the same run, but a prompt may come out a few samples different after another voice was
// loaded first: regenerate only what changed, and keep the files the tests were measured on.
// Run: node --import tsx scripts/make-sim-prompts.ts [prompt-file …] (only those, e.g. hello-kal)
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { concatPcm } from '../src/audio/pcm.ts';
import { resample } from '../src/audio/resampler.ts';
import { encodeWav } from '../src/audio/wav.ts';
import { FliteTtsEngine } from '../src/speech/tts/flite.ts';

const PROMPTS = [
  { file: 'menu-appointments-billing-kal', voice: 'kal', text: 'For appointments press one, for billing press two.' },
  { file: 'reached-appointments-awb', voice: 'awb', text: 'You have reached appointments. Goodbye.' },
  { file: 'reached-billing-awb', voice: 'awb', text: 'You have reached billing. Goodbye.' },
  { file: 'front-desk-alex-rms', voice: 'rms', text: 'Front desk, this is Alex.' },
  {
    file: 'voicemail-greeting-slt',
    voice: 'slt',
    text: "Hi, you've reached Sam. I can't take your call right now. Please leave a message after the tone.",
  },
  // A person answering an outbound call and waiting (bench:amd, test/e2e/voicemail.test.ts).
  { file: 'hello-kal', voice: 'kal', text: 'Hello?' },
  { file: 'hello-rms', voice: 'rms', text: 'Hello?' },
  { file: 'hello-slt', voice: 'slt', text: 'Hello?' },
  { file: 'hello-awb', voice: 'awb', text: 'Hello?' },
  // A caller acknowledging over the agent, and one cutting in (test/e2e/twilio-call.test.ts). Moonshine reads flite's
  // "Uh-huh" as "Of a"; slt's "Right, okay, yeah." it reads as said, at every length.
  { file: 'right-okay-yeah-slt', voice: 'slt', text: 'Right, okay, yeah.' },
  { file: 'wait-stop-kal', voice: 'kal', text: 'Wait, stop.' },
] as const;

/** An answering machine's beep: 1 kHz for half a second. */
const BEEP = { file: 'beep-1000hz', hz: 1000, ms: 500, level: 0.3 } as const;

const outDir = join(import.meta.dirname, '..', 'media', 'sim-scripts', 'prompts');
mkdirSync(outDir, { recursive: true });
// Named on the command line: only those prompts are made (the others keep the audio the tests were measured on).
const only = process.argv.slice(2);
const engine = new FliteTtsEngine();
try {
  for (const prompt of PROMPTS) {
    if (only.length > 0 && !only.includes(prompt.file)) continue;
    const chunks: Int16Array[] = [];
    for await (const chunk of engine.synthesize(prompt.text, { sampleRate: 16000, voiceId: prompt.voice }))
      chunks.push(chunk.samples);
    const wide = concatPcm(chunks);
    writeFileSync(
      join(outDir, `${prompt.file}.8k-ulaw.wav`),
      encodeWav({ samples: resample(wide, 16000, 8000), sampleRate: 8000 }, 'mulaw'),
    );
    process.stdout.write(`${prompt.file}.8k-ulaw.wav (${(wide.length / 16000).toFixed(2)} s): ${prompt.text}\n`);
  }
} finally {
  await engine.close();
}
const beep = Int16Array.from({ length: (8000 * BEEP.ms) / 1000 }, (_, i) =>
  Math.round(BEEP.level * 32767 * Math.sin((2 * Math.PI * BEEP.hz * i) / 8000)),
);
writeFileSync(join(outDir, `${BEEP.file}.8k-ulaw.wav`), encodeWav({ samples: beep, sampleRate: 8000 }, 'mulaw'));
process.stdout.write(`${BEEP.file}.8k-ulaw.wav (${BEEP.ms / 1000} s): ${BEEP.hz} Hz\n`);
