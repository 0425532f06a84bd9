import { defineConfig } from 'vitest/config';

// Files compare latencies between paths measured in the same run: they run alone, after the
// rest, so another file's engines never skew one path and not the other.
const RUN_ALONE = ['test/e2e/sim-call.test.ts'];
const E2E = ['test/e2e/**/*.test.ts'];

// Three groups, one after another. The unit files keep the CPU busy (recognisers decoding whole test
// sets): one per core. The end-to-end files mostly wait on real-time calls and processes (in CI one
// used 20-30 s of CPU for 50-90 s of wall), so three run at a time, and never beside a unit file's
// decoding, which would starve their calls.
export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    reporters: ['default', './test/helpers/summary-reporter.ts'],
    projects: [
      {
        extends: true,
        test: {
          name: 'unit',
          include: ['test/**/*.test.ts'],
          exclude: E2E,
          maxWorkers: 2,
          sequence: { groupOrder: 0 },
        },
      },
      {
        extends: true,
        test: { name: 'e2e', include: E2E, exclude: RUN_ALONE, maxWorkers: 3, sequence: { groupOrder: 1 } },
      },
      {
        extends: true,
        test: { name: 'alone', include: RUN_ALONE, fileParallelism: false, sequence: { groupOrder: 2 } },
      },
    ],
  },
});
