// Derives the starting cepstral mean (-cmninit) of the telephone model variant: calibration
// sentences (none of them a fixture phrase) spoken by the flite voices, sent through the carrier
// path a phone call takes (16 kHz -> 8 kHz -> G.711 μ-law -> back to 16 kHz, as the recogniser's
// worker does), decoded voice by voice with the Debian model, and the decoder's converged mean
// averaged over the voices. The telephone channel, not the voice, dominates that mean, which is
// why a wideband starting point leaves a caller's first sentences badly normalised.
// No recorded test-set audio (asterisk prompts) and no fixture is used.
// Run: node --import tsx scripts/derive-telephone-cmn.ts [--out DIR]   (DIR: keep the WAVs)
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { concatPcm } from '../src/audio/pcm.ts';
import { encodeWav } from '../src/audio/wav.ts';
import { loadDecoderClass } from '../src/speech/stt/pocketsphinx/addon.ts';
import { DEBIAN_MODEL_DIR } from '../src/speech/stt/pocketsphinx/models.ts';
import { FliteTtsEngine } from '../src/speech/tts/flite.ts';
import { CALIBRATION_SENTENCES, CALIBRATION_VOICES, throughTelephone } from './telephone-calibration.ts';

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { out: { type: 'string' } } });
  if (values.out) mkdirSync(values.out, { recursive: true });
  const tts = new FliteTtsEngine();
  const Decoder = loadDecoderClass();
  const means: number[][] = [];
  try {
    for (const voice of CALIBRATION_VOICES) {
      const decoder = new Decoder([
        '-hmm',
        join(DEBIAN_MODEL_DIR, 'en-us'),
        '-lm',
        join(DEBIAN_MODEL_DIR, 'en-us.lm.bin'),
        '-dict',
        join(DEBIAN_MODEL_DIR, 'cmudict-en-us.dict'),
      ]);
      const narrowClips: Int16Array[] = [];
      for (const [i, text] of CALIBRATION_SENTENCES.entries()) {
        const chunks: Int16Array[] = [];
        for await (const c of tts.synthesize(text, { sampleRate: 16000, voiceId: voice })) chunks.push(c.samples);
        const wide = concatPcm(chunks);
        const narrow = throughTelephone(wide);
        narrowClips.push(narrow);
        if (values.out) {
          writeFileSync(
            join(values.out, `${String(i).padStart(2, '0')}-${voice}.16k.wav`),
            encodeWav({ samples: wide, sampleRate: 16000 }),
          );
          writeFileSync(
            join(values.out, `${String(i).padStart(2, '0')}-${voice}.tel.wav`),
            encodeWav({ samples: narrow, sampleRate: 16000 }),
          );
        }
      }
      // Two passes: the first moves the mean away from the wideband prior, the second settles it.
      for (let pass = 0; pass < 2; pass++) {
        for (const narrow of narrowClips) {
          decoder.startUtt();
          decoder.processRaw(narrow);
          decoder.endUtt();
        }
      }
      const cmn = decoder.cmn();
      decoder.close();
      if (!cmn) throw new Error('the model has no live CMN');
      means.push(cmn.mean);
      process.stdout.write(`${voice}: ${cmn.mean.map((x) => x.toFixed(2)).join(',')}\n`);
    }
  } finally {
    await tts.close();
  }
  const average = means[0]!.map((_, k) => means.reduce((sum, m) => sum + m[k]!, 0) / means.length);
  process.stdout.write(`-cmninit ${average.map((x) => x.toFixed(2)).join(',')}\n`);
  if (values.out) {
    const list = CALIBRATION_VOICES.flatMap((voice) =>
      CALIBRATION_SENTENCES.map((text, i) => ({ voice, text, file: `${String(i).padStart(2, '0')}-${voice}` })),
    );
    writeFileSync(join(values.out, 'list.json'), JSON.stringify(list, null, 2));
  }
}

await main();
