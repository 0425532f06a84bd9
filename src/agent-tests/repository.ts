// Where agent tests and their runs are kept; the store implements it.
import type { AgentTest, TestRun } from './schema.ts';

export interface AgentTestRepository {
  insertTest(orgId: string, test: AgentTest): Promise<void>;
  getTest(orgId: string, testId: string): Promise<AgentTest | undefined>;
  /** Replaces the stored test; false when there is none. */
  updateTest(orgId: string, test: AgentTest): Promise<boolean>;
  deleteTest(orgId: string, testId: string): Promise<boolean>;
  /** An agent's tests in the order they were added. */
  listTests(orgId: string, agentId: string): Promise<AgentTest[]>;
  /** `ownerNode`: the node running the run's calls; the run dies with it. */
  insertRun(orgId: string, run: TestRun, ownerNode: string | null): Promise<void>;
  getRun(orgId: string, runId: string): Promise<TestRun | undefined>;
  /** Changes a run in one transaction; undefined when there is none. */
  updateRun(orgId: string, runId: string, change: (run: TestRun) => TestRun): Promise<TestRun | undefined>;
  /** An agent's runs, newest first. */
  listRuns(orgId: string, agentId: string, limit: number): Promise<TestRun[]>;
  /** The newest finished run of the agent on a version below `belowVersion`. */
  lastFinishedRunBelow(orgId: string, agentId: string, belowVersion: number): Promise<TestRun | undefined>;
  /** Runs still marked running, in any organization, whose node is none of `liveNodes` (it died, or restarted). */
  orphanedRuns(liveNodes: string[]): Promise<{ orgId: string; run: TestRun }[]>;
}
