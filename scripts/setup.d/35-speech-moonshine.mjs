// Moonshine, the neural offline recogniser (stt.engine "moonshine"): the English ONNX weights
// (MIT) of its tiny and base models ship in the npm package @usefulsensors/moonshine-js 0.1.16
// (later versions dropped base English; the tiny files are the same bytes as in
// @moonshine-ai/moonshine-js 0.1.29). The package is for browsers and pulls in a browser runtime,
// so it is not a dependency: set-up fetches its pinned tarball from the npm registry with `npm pack`,
// checks the registry's integrity hash and keeps only the model files, under
// build/models/moonshine-<model>. Nothing is fetched at run time.
import { createHash } from 'node:crypto';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const apt = [['tar', 'unpacks the model files from the Moonshine npm tarball']];

const PACKAGE = '@usefulsensors/moonshine-js@0.1.16';
const INTEGRITY = 'sha512-iQIF4XHwyPxBm1l/ECJPjJLQj8RvlYj2guRsiUgrfa9vSE3gYXeaoV2DHjNgi7NIUTyl648AG2t+Ndbrj+L7TA==';
const MODELS = ['tiny', 'base'];
const FILES = ['encoder_model.onnx', 'decoder_model_merged.onnx'];
const inTarball = (model) => `package/dist/model/${model}/quantized`;

export const steps = [
  {
    name: 'moonshine models',
    run({ root, say, run }) {
      const dirOf = (model) => join(root, 'build', 'models', `moonshine-${model}`);
      const current = (model) => {
        const stampFile = join(dirOf(model), '.stamp');
        return (
          existsSync(stampFile) &&
          readFileSync(stampFile, 'utf8') === INTEGRITY &&
          FILES.every((f) => existsSync(join(dirOf(model), f)))
        );
      };
      if (MODELS.every(current)) {
        say('moonshine models: up to date');
        return;
      }
      say(`moonshine models: unpacking ${MODELS.join(' and ')} from the npm package ${PACKAGE}`);
      const work = mkdtempSync(join(tmpdir(), 'moonshine-'));
      try {
        run('npm', ['pack', PACKAGE, '--pack-destination', work, '--silent']);
        const tarball = readdirSync(work).find((f) => f.endsWith('.tgz'));
        if (!tarball) throw new Error(`npm pack ${PACKAGE} wrote no tarball`);
        const got = `sha512-${createHash('sha512')
          .update(readFileSync(join(work, tarball)))
          .digest('base64')}`;
        if (got !== INTEGRITY) throw new Error(`${PACKAGE}: integrity ${got} is not the pinned ${INTEGRITY}`);
        run('tar', [
          '-xzf',
          join(work, tarball),
          '-C',
          work,
          ...MODELS.flatMap((m) => FILES.map((f) => `${inTarball(m)}/${f}`)),
        ]);
        for (const model of MODELS) {
          const dir = dirOf(model);
          rmSync(dir, { recursive: true, force: true });
          mkdirSync(dir, { recursive: true });
          // Copied, not renamed: the temp folder may be on another file system (a tmpfs /tmp).
          for (const f of FILES) copyFileSync(join(work, inTarball(model), f), join(dir, f));
          writeFileSync(join(dir, '.stamp'), INTEGRITY);
        }
      } finally {
        rmSync(work, { recursive: true, force: true });
      }
    },
  },
];
