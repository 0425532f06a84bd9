// Moonshine tiny, the neural offline recogniser (stt.engine "moonshine"): its English ONNX
// weights (MIT) ship in the npm package @moonshine-ai/moonshine-js. That package cannot be a
// dependency (it depends on a file: path that only exists in its authors' checkout), so set-up
// fetches its pinned tarball from the npm registry with `npm pack`, checks the registry's
// integrity hash and keeps only the two model files under build/models/moonshine-tiny.
// Nothing is fetched at run time.
import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const apt = [['tar', 'unpacks the model files from the Moonshine npm tarball']];

const PACKAGE = '@moonshine-ai/moonshine-js@0.1.29';
const INTEGRITY = 'sha512-Gx1B3mJcbM68ihSy/LyJEuEkGq7sYMqTb04zNdcIeidU0URVlSmXP0GyiQOTTAqDZQXlIC7k+bky+FdXk0UPlg==';
const FILES = ['encoder_model.onnx', 'decoder_model_merged.onnx'];
const IN_TARBALL = 'package/dist/model/tiny/quantized';

export const steps = [
  {
    name: 'moonshine model',
    run({ root, say, run }) {
      const dir = join(root, 'build', 'models', 'moonshine-tiny');
      const stampFile = join(dir, '.stamp');
      if (existsSync(stampFile) && readFileSync(stampFile, 'utf8') === INTEGRITY && FILES.every((f) => existsSync(join(dir, f)))) {
        say('moonshine model: up to date');
        return;
      }
      say(`moonshine model: unpacking ${FILES.join(', ')} from the npm package ${PACKAGE}`);
      const work = mkdtempSync(join(tmpdir(), 'moonshine-'));
      try {
        run('npm', ['pack', PACKAGE, '--pack-destination', work, '--silent']);
        const tarball = readdirSync(work).find((f) => f.endsWith('.tgz'));
        if (!tarball) throw new Error(`npm pack ${PACKAGE} wrote no tarball`);
        const got = `sha512-${createHash('sha512').update(readFileSync(join(work, tarball))).digest('base64')}`;
        if (got !== INTEGRITY) throw new Error(`${PACKAGE}: integrity ${got} is not the pinned ${INTEGRITY}`);
        run('tar', ['-xzf', join(work, tarball), '-C', work, ...FILES.map((f) => `${IN_TARBALL}/${f}`)]);
        rmSync(dir, { recursive: true, force: true });
        mkdirSync(dir, { recursive: true });
        // Copied, not renamed: the temp folder may be on another file system (a tmpfs /tmp).
        for (const f of FILES) copyFileSync(join(work, IN_TARBALL, f), join(dir, f));
        writeFileSync(stampFile, INTEGRITY);
      } finally {
        rmSync(work, { recursive: true, force: true });
      }
    },
  },
];
