import { defineConfig } from 'vitest/config';

// Three groups, one after the other. Unit files first, two workers beside the type check. Then the
// end-to-end files, two at a time: starting them only after the unit files keeps the type check and
// the unit workers from crowding their first calls (a caller's words were once lost there, at load
// 10 on two cores). Three at a time used the idle third of the machine (their calls play audio in
// real time) and took ~940 s instead of ~1,200, but at load 9 callers' words went unheard and a
// service process missed its start timeout. Last, the files that compare latencies between paths
// measured in the same run, alone, so another file's engines never skew one path and not the other.
const RUN_ALONE = ['test/e2e/sim-call.test.ts'];
const END_TO_END = ['test/e2e/**'];

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
          // Unit files share their worker's modules instead of importing the whole tree again each
          // (about a third of their time on two cores): none of them mocks a module or leaves a
          // server running, and test/helpers keep no state between files.
          name: 'unit',
          include: ['test/**/*.test.ts'],
          exclude: END_TO_END,
          isolate: false,
          maxWorkers: 2,
          sequence: { groupOrder: 0 },
        },
      },
      {
        extends: true,
        test: {
          // End-to-end files start services, engines and child processes: each gets a fresh process, so
          // whatever one leaves behind never runs on in the next.
          name: 'e2e',
          include: END_TO_END,
          exclude: RUN_ALONE,
          maxWorkers: 2,
          sequence: { groupOrder: 1 },
        },
      },
      {
        extends: true,
        test: { name: 'alone', include: RUN_ALONE, fileParallelism: false, sequence: { groupOrder: 2 } },
      },
    ],
  },
});
