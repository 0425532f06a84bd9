// Regenerates media/fixtures/: caller phrases typical of phone calls, spoken by the flite voices,
// as 16 kHz PCM16 WAV and as 8 kHz μ-law WAV made with our own resampler and G.711 codec (what a
// carrier would send), plus transcripts.json. Deterministic: flite gives the same audio each run.
// Run: node --import tsx scripts/make-fixtures.ts
import { mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { concatPcm } from '../src/audio/pcm.ts';
import { resample } from '../src/audio/resampler.ts';
import { encodeWav } from '../src/audio/wav.ts';
import { FliteTtsEngine } from '../src/speech/tts/flite.ts';

const PHRASES = [
  'my name is john smith',
  'i would like to book an appointment',
  'tomorrow at three pm',
  'yes please',
  'no thank you',
  'can you transfer me to billing',
  'what are your opening hours',
  'goodbye',
  'i want to cancel my order',
  'my phone number is five five five one two three four',
  'can i speak to a real person',
  'i am calling about my last invoice',
  'is the office open on saturday',
  'next monday morning works for me',
  'my account number is four two seven nine',
  'sorry could you repeat that',
  'i need to reschedule my appointment',
  'how much does it cost',
  'that is correct',
  'please send me a confirmation by email',
  'where is your nearest location',
  'hold on a second',
  'i did not receive my package',
  'thank you very much have a nice day',
] as const;

const VOICES = ['rms', 'slt', 'awb', 'kal'] as const;

export interface FixtureEntry {
  file: string;
  voice: string;
  text: string;
  sampleRate: number;
  encoding: 'pcm16' | 'mulaw';
}

const root = join(import.meta.dirname, '..');
const outDir = join(root, 'media', 'fixtures');
mkdirSync(outDir, { recursive: true });
for (const name of readdirSync(outDir)) if (name.endsWith('.wav')) rmSync(join(outDir, name));

const engine = new FliteTtsEngine();
const entries: FixtureEntry[] = [];
try {
  for (const [index, text] of PHRASES.entries()) {
    const voice = VOICES[index % VOICES.length]!;
    const chunks: Int16Array[] = [];
    for await (const chunk of engine.synthesize(text, { sampleRate: 16000, voiceId: voice }))
      chunks.push(chunk.samples);
    const wide = concatPcm(chunks);
    const slug = `${String(index + 1).padStart(2, '0')}-${text.split(' ').slice(0, 4).join('-')}-${voice}`;
    const wideFile = `${slug}.16k.wav`;
    const narrowFile = `${slug}.8k-ulaw.wav`;
    writeFileSync(join(outDir, wideFile), encodeWav({ samples: wide, sampleRate: 16000 }));
    writeFileSync(
      join(outDir, narrowFile),
      encodeWav({ samples: resample(wide, 16000, 8000), sampleRate: 8000 }, 'mulaw'),
    );
    entries.push({ file: wideFile, voice, text, sampleRate: 16000, encoding: 'pcm16' });
    entries.push({ file: narrowFile, voice, text, sampleRate: 8000, encoding: 'mulaw' });
    process.stdout.write(`${wideFile} (${(wide.length / 16000).toFixed(2)} s)\n`);
  }
} finally {
  await engine.close();
}
writeFileSync(join(outDir, 'transcripts.json'), `${JSON.stringify(entries, null, 2)}\n`);
process.stdout.write(`${entries.length} files and transcripts.json in ${outDir}\n`);
