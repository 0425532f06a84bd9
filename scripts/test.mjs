#!/usr/bin/env node
// `npm test`: the type check and the tests side by side. The type check (~40 s on two cores) used to
// run first while the tests waited; the tests start at once now, and the run fails if either fails.
// Arguments go to vitest (`npm test -- test/e2e/sip-call.test.ts`).
import { spawn } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const bin = (name) => join(root, 'node_modules', '.bin', name);

/** Runs a command to its end: its exit code, and what it wrote when it is buffered. */
function run(command, args, { buffered }) {
  return new Promise((resolve) => {
    const child = spawn(command, args, { cwd: root, stdio: buffered ? ['ignore', 'pipe', 'pipe'] : 'inherit' });
    let output = '';
    child.stdout?.on('data', (chunk) => (output += chunk));
    child.stderr?.on('data', (chunk) => (output += chunk));
    child.on('close', (code, signal) => resolve({ code: code ?? (signal ? 1 : 0), output }));
  });
}

// The type check's errors are held until the tests end, so they are not lost among the tests' lines.
const [types, tests] = await Promise.all([
  run(bin('tsc'), ['--noEmit'], { buffered: true }),
  run(bin('vitest'), ['run', ...process.argv.slice(2)], { buffered: false }),
]);
if (types.code !== 0) process.stdout.write(`\ntsc --noEmit failed:\n${types.output}\n`);
else process.stdout.write('\ntsc --noEmit: no type errors\n');
process.exit(types.code !== 0 ? types.code : tests.code);
