import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

describe('ending a speech worker', () => {
  // Before terminateWorker held the process, 6-8 of 20-30 single closes like these ended it with
  // exit code 13 (a top-level await left unsettled): a script, or a service shutting down.
  it('closing the flite engine right after a cut-off sentence always settles, with nothing else holding the process', () => {
    const run = spawnSync(process.execPath, ['--import', 'tsx', join(import.meta.dirname, 'worker-exit-child.ts')], {
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(run.stderr).toBe('');
    expect(run.stdout).toBe('closed 12\n');
    expect(run.status).toBe(0);
  });
});
