// Speech audio (TTS engines, VAD, audio test sets). Debian packages and npm packages only:
// nothing is fetched at run time. onnxruntime-node's own download is skipped (.npmrc
// onnxruntime-node-install=skip): its npm package already ships the Linux x64 CPU binary.
// The embedded default voice is libflite through a native addon built here from native/flite.
// G.722, the wideband codec of phone lines that offer 16 kHz, is spandsp's through native/g722.
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { nativeAddonStep } from '../native-addon.mjs';

export const apt = [
  ['flite', 'fixture generation with the flite CLI (the runtime speaks through the flite addon)'],
  ['libflite1', 'flite library and its voices slt, rms, awb, kal, kal16 (embedded default TTS engine)'],
  ['flite1-dev', 'headers and link libraries for the flite addon'],
  ['g++', 'compiles the flite addon'],
  ['make', 'node-gyp builds with make'],
  ['python3', 'node-gyp runs gyp with python3'],
  ['libspandsp-dev', "spandsp's G.722 codec and its headers for the g722 addon (wideband phone lines)"],
  ['pkg-config', 'finds the spandsp compile and link flags'],
  ['espeak-ng', 'text-to-speech engine with many languages'],
  ['asterisk-core-sounds-en-wav', '8 kHz human telephone prompts: a test set only for VAD/STT'],
  ['asterisk-core-sounds-en', 'transcripts (core-sounds-en.txt) of the asterisk telephone prompts'],
  ['asterisk-moh-opsound-wav', 'music on hold: VAD false-positive test set'],
];

// An Ogg Opus reader and decoder we did not write, to check the recordings we write.
export const testApt = [
  ['opus-tools', 'opusinfo and opusdec check the Ogg Opus recordings in the tests'],
  ['asterisk-core-sounds-en-g722', 'the same human prompts at 16 kHz in G.722: the wideband bench set (bench:speech)'],
];

const fliteAddonStep = nativeAddonStep({
  name: 'flite addon',
  folder: 'flite',
  target: 'flite_addon',
  output: 'flite.node',
  sharedFolders: ['common'],
  requires: {
    file: '/usr/include/flite/flite.h',
    missing: 'apt package flite1-dev; flite voices will fail with TTS_ADDON_MISSING',
  },
});

const g722AddonStep = nativeAddonStep({
  name: 'g722 addon',
  folder: 'g722',
  target: 'g722_addon',
  output: 'g722.node',
  sharedFolders: ['common'],
  requires: {
    file: '/usr/include/spandsp/g722.h',
    missing: 'apt package libspandsp-dev; lines in G.722 will fail with AUDIO_G722_MISSING',
  },
});

export const steps = [
  fliteAddonStep,
  g722AddonStep,
  {
    name: 'speech-audio: check the Opus addon (browser calls in Opus, Ogg Opus recordings)',
    async run({ root, say }) {
      try {
        const { createRequire } = await import('node:module');
        const { OpusEncoder } = createRequire(join(root, 'package.json'))('@discordjs/opus');
        new OpusEncoder(16000, 1).encode(Buffer.alloc(640));
        say('speech-audio: Opus addon built and encodes');
      } catch (error) {
        say(
          `speech-audio: the Opus addon (@discordjs/opus) does not load: ${String(error).split('\n')[0]}; browser calls stay PCM and ?format=ogg answers 501`,
        );
      }
    },
  },
  {
    name: 'speech-audio: check the VAD runtime and model shipped in node_modules',
    run({ root, say }) {
      const bin = join(root, 'node_modules', 'onnxruntime-node', 'bin');
      const napi = existsSync(bin) ? readdirSync(bin).filter((d) => d.startsWith('napi-v')) : [];
      const hasBinary = napi.some((d) =>
        existsSync(join(bin, d, process.platform, process.arch, 'onnxruntime_binding.node')),
      );
      const model = join(root, 'node_modules', '@jjhbw', 'silero-vad', 'weights', 'silero_vad.onnx');
      if (hasBinary && existsSync(model)) {
        say('speech-audio: onnxruntime-node binary and Silero VAD model present');
      } else {
        say(
          `speech-audio: missing ${hasBinary ? '' : `onnxruntime-node binary for ${process.platform}/${process.arch} `}${existsSync(model) ? '' : 'Silero model'}: VAD will not load`,
        );
      }
    },
  },
];
