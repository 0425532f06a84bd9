// Offline speech-to-text: Debian's pocketsphinx and its US English model, the native addon that
// streams audio into it, and the telephone-band model variant. Only Node built-ins here.
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { nativeAddonStep } from '../native-addon.mjs';

export const apt = [
  ['pocketsphinx', 'offline speech recogniser library (embedded STT engine)'],
  ['libpocketsphinx-dev', 'headers and pkg-config for the pocketsphinx addon'],
  ['libsphinxbase-dev', 'sphinxbase headers the pocketsphinx addon includes'],
  ['pocketsphinx-en-us', 'US English acoustic model, language model and dictionary'],
  ['pkg-config', 'finds the pocketsphinx compile and link flags'],
  ['g++', 'compiles the pocketsphinx addon'],
  ['make', 'node-gyp builds with make'],
  ['python3', 'node-gyp runs gyp with python3'],
];

const DEBIAN_MODEL = '/usr/share/pocketsphinx/model/en-us/en-us';

const addonStep = nativeAddonStep({
  name: 'pocketsphinx addon',
  folder: 'pocketsphinx',
  target: 'pocketsphinx_addon',
  output: 'pocketsphinx.node',
  sharedFolders: ['common'],
});

// The telephone-band variant: the Debian acoustic model with feature settings for speech that
// went through an 8 kHz telephone channel. Files are linked, only feat.params is rewritten.
export const TELEPHONE_FEAT_PARAMS = {
  // Keep the filterbank the model was trained with (changing -upperf/-nfilt moves every
  // cepstrum away from the trained means: 86% WER on the μ-law fixtures with -upperf 3800);
  // normalise cepstra per caller as they arrive.
  '-cmn': 'live',
  // Where a telephone channel's cepstral mean lies (the wideband model starts at 41,-5.3,-0.1,…):
  // measured by scripts/derive-telephone-cmn.ts on calibration sentences of four flite voices
  // sent through 8 kHz μ-law — no fixture phrase and no recorded test-set audio.
  '-cmninit': '46.67,33.45,-30.78,50.36,-17.37,-0.61,21.06,-27.29,16.64,-7.87,-0.12,15.59,-14.18',
};

const telephoneStep = {
  name: 'pocketsphinx telephone model',
  run({ root, say }) {
    const dir = join(root, 'build', 'models', 'en-us-telephone');
    const stampFile = join(dir, '.stamp');
    const stamp = JSON.stringify({ v: 2, params: TELEPHONE_FEAT_PARAMS });
    if (existsSync(stampFile) && readFileSync(stampFile, 'utf8') === stamp) {
      say('pocketsphinx telephone model: up to date');
      return;
    }
    if (!existsSync(join(DEBIAN_MODEL, 'feat.params'))) {
      say(`pocketsphinx telephone model: ${DEBIAN_MODEL} missing (apt package pocketsphinx-en-us), skipping`);
      return;
    }
    say(`pocketsphinx telephone model: deriving ${dir} from ${DEBIAN_MODEL}`);
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
    for (const f of readdirSync(DEBIAN_MODEL)) {
      if (f !== 'feat.params') symlinkSync(join(DEBIAN_MODEL, f), join(dir, f));
    }
    const params = readFileSync(join(DEBIAN_MODEL, 'feat.params'), 'utf8')
      .split('\n')
      .filter((l) => l.trim() !== '')
      .map((l) => {
        const [flag] = l.split(/\s+/);
        return flag in TELEPHONE_FEAT_PARAMS ? `${flag} ${TELEPHONE_FEAT_PARAMS[flag]}` : l;
      });
    writeFileSync(join(dir, 'feat.params'), params.join('\n') + '\n');
    writeFileSync(stampFile, stamp);
  },
};

export const steps = [addonStep, telephoneStep];
