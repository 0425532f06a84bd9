// Where agent tests and their runs are kept; the store implements it.
import type { AgentTest, TestRun } from './schema.ts';

export interface AgentTestRepository {
  insertTest(orgId: string, test: AgentTest): void;
  getTest(orgId: string, testId: string): AgentTest | undefined;
  /** Replaces the stored test; false when there is none. */
  updateTest(orgId: string, test: AgentTest): boolean;
  deleteTest(orgId: string, testId: string): boolean;
  /** An agent's tests in the order they were added. */
  listTests(orgId: string, agentId: string): AgentTest[];
  insertRun(orgId: string, run: TestRun): void;
  getRun(orgId: string, runId: string): TestRun | undefined;
  /** Changes a run in one transaction; undefined when there is none. */
  updateRun(orgId: string, runId: string, change: (run: TestRun) => TestRun): TestRun | undefined;
  /** An agent's runs, newest first. */
  listRuns(orgId: string, agentId: string, limit: number): TestRun[];
  /** The newest finished run of the agent on a version below `belowVersion`. */
  lastFinishedRunBelow(orgId: string, agentId: string, belowVersion: number): TestRun | undefined;
  /** Every run still marked running, in any organization (after a restart: none is). */
  running(): { orgId: string; run: TestRun }[];
}
