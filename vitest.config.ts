import { defineConfig } from 'vitest/config';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

// Three groups, one after the other. Unit files first, two workers beside the type check. Then the end-to-end files,
// three at a time: their calls play audio in real time and leave much of the machine idle, so a third file cut a
// fresh clone's run by a quarter (937 → 706 s). Starting them only after the unit files keeps the type check and the
// unit workers from crowding their first calls (at load 10 on two cores a caller's words were once lost there). Last,
// the files that compare latencies between paths measured in the same run, alone, so another file's engines never
// skew one path and not the other.
const RUN_ALONE = ['test/e2e/sim-call.test.ts'];
const END_TO_END = ['test/e2e/**'];
/**
 * The longest end-to-end files (40-110 s each, longest first), started before the rest so none of them is the last to
 * finish (keypad's 41 s, started last, once was). Vitest orders by the last run's durations where it has them, but a
 * fresh clone (CI) has none and would order by file size.
 */
const LONGEST_FIRST = [
  'test/e2e/agent-tests.test.ts',
  'test/e2e/carrier-conformance-twilio.test.ts',
  'test/e2e/carrier-conformance-telnyx-plivo.test.ts',
  'test/e2e/carrier-conformance-vonage-sip.test.ts',
  'test/e2e/sip-call.test.ts',
  'test/e2e/machine-recogniser.test.ts',
  'test/e2e/twilio-call.test.ts',
  'test/e2e/restart.test.ts',
  'test/e2e/nodes-campaign.test.ts',
  'test/e2e/keypad.test.ts',
  'test/e2e/transfer-sim.test.ts',
];

class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const rank = (file: TestSpecification) => {
      const at = LONGEST_FIRST.findIndex((path) => file.moduleId.endsWith(path));
      return at < 0 ? LONGEST_FIRST.length : at;
    };
    const group = (file: TestSpecification) => file.project.config.sequence.groupOrder;
    // Stable: only the listed files move, to the front of their group.
    return sorted
      .map((file, at) => ({ file, at }))
      .sort((a, b) => group(a.file) - group(b.file) || rank(a.file) - rank(b.file) || a.at - b.at)
      .map(({ file }) => file);
  }
}

export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    reporters: ['default', './test/helpers/summary-reporter.ts'],
    sequence: { sequencer: LongestFirst },
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
          maxWorkers: 3,
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
