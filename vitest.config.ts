import { defineConfig } from 'vitest/config';

// Files compare latencies between paths measured in the same run: they run alone, after the
// rest (two at a time, one per core), so another file's engines never skew one path and not the other.
const RUN_ALONE = ['test/e2e/sim-call.test.ts'];

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
          name: 'suite',
          include: ['test/**/*.test.ts'],
          exclude: RUN_ALONE,
          maxWorkers: 2,
          sequence: { groupOrder: 0 },
        },
      },
      {
        extends: true,
        test: { name: 'alone', include: RUN_ALONE, fileParallelism: false, sequence: { groupOrder: 1 } },
      },
    ],
  },
});
