// Speech audio (TTS engines, VAD, audio test sets). Debian packages and npm packages only:
// nothing is fetched at run time. onnxruntime-node's own download is skipped (.npmrc
// onnxruntime-node-install=skip): its npm package already ships the Linux x64 CPU binary.
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

export const apt = [
  ['flite', 'embedded default text-to-speech engine (voices slt, rms, awb, kal) and fixture generation'],
  ['espeak-ng', 'text-to-speech engine with many languages'],
  ['asterisk-core-sounds-en-wav', '8 kHz human telephone prompts: a test set only for VAD/STT'],
  ['asterisk-core-sounds-en', 'transcripts (core-sounds-en.txt) of the asterisk telephone prompts'],
  ['asterisk-moh-opsound-wav', 'music on hold: VAD false-positive test set'],
];

export const steps = [
  {
    name: 'speech-audio: check the VAD runtime and model shipped in node_modules',
    run({ root, say }) {
      const bin = join(root, 'node_modules', 'onnxruntime-node', 'bin');
      const napi = existsSync(bin) ? readdirSync(bin).filter((d) => d.startsWith('napi-v')) : [];
      const hasBinary = napi.some((d) => existsSync(join(bin, d, process.platform, process.arch, 'onnxruntime_binding.node')));
      const model = join(root, 'node_modules', '@jjhbw', 'silero-vad', 'weights', 'silero_vad.onnx');
      if (hasBinary && existsSync(model)) {
        say('speech-audio: onnxruntime-node binary and Silero VAD model present');
      } else {
        say(`speech-audio: missing ${hasBinary ? '' : `onnxruntime-node binary for ${process.platform}/${process.arch} `}${existsSync(model) ? '' : 'Silero model'}: VAD will not load`);
      }
    },
  },
];
