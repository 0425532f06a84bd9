// A set-up step that builds one of the project's native addons (native/<folder>) with node-gyp
// against the local Node headers, and copies it to build/native/<output>. Skipped while the
// built file is newer than every source, so a second set-up costs nothing.
import { copyFileSync, existsSync, mkdirSync, readdirSync, renameSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';

function newestMtime(paths) {
  return Math.max(...paths.map((p) => statSync(p).mtimeMs));
}

/**
 * @param {{ name: string, folder: string, target: string, output: string, sharedFolders?: string[], requires?: { file: string, missing: string } }} addon
 */
export function nativeAddonStep({ name, folder, target, output, sharedFolders = [], requires }) {
  return {
    name,
    run({ root, say, run, buildEnv }) {
      const dir = join(root, 'native', folder);
      const out = join(root, 'build', 'native', output);
      const sourceDirs = [join(dir, 'src'), ...sharedFolders.map((f) => join(root, 'native', f))];
      const sources = [join(dir, 'binding.gyp'), ...sourceDirs.flatMap((d) => readdirSync(d).map((f) => join(d, f)))];
      if (existsSync(out) && statSync(out).mtimeMs >= newestMtime(sources)) {
        say(`${name}: up to date`);
        return;
      }
      if (requires && !existsSync(requires.file)) {
        say(`${name}: ${requires.file} missing, skipping: ${requires.missing}`);
        return;
      }
      say(`${name}: building with node-gyp against local Node headers`);
      const gyp = join(root, 'node_modules', 'node-gyp', 'bin', 'node-gyp.js');
      run(process.execPath, [gyp, 'rebuild', '--directory', dir], buildEnv());
      mkdirSync(join(root, 'build', 'native'), { recursive: true });
      // A new file renamed into place: a running service keeps the library it has mapped.
      copyFileSync(join(dir, 'build', 'Release', `${target}.node`), `${out}.tmp`);
      renameSync(`${out}.tmp`, out);
      rmSync(join(dir, 'build'), { recursive: true, force: true });
      say(`${name}: built ${out}`);
    },
  };
}
