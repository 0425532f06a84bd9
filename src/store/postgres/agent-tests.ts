// Agent tests and runs on PostgreSQL: JSON documents under the columns they are found by.
import type { AgentTestRepository } from '../../agent-tests/repository.ts';
import { AGENT_TEST_SECRETS, type AgentTest, type TestRun } from '../../agent-tests/schema.ts';
import type { SecretBox } from '../../secrets/sealed.ts';
import type { PgDb } from './db.ts';

export class PgAgentTestRepository implements AgentTestRepository {
  constructor(
    private readonly db: PgDb,
    private readonly box: SecretBox,
  ) {}

  /** The test column: its secrets sealed. */
  private stored(test: AgentTest): string {
    return JSON.stringify(AGENT_TEST_SECRETS.seal(test, this.box));
  }

  /** A stored test with its secrets opened (plaintext from before sealing passes as it is). */
  private opened(text: string): AgentTest {
    return AGENT_TEST_SECRETS.open(JSON.parse(text) as AgentTest, this.box);
  }

  async insertTest(orgId: string, test: AgentTest): Promise<void> {
    await this.db.run('INSERT INTO agent_tests (test_id, org_id, agent_id, created_at, test) VALUES (?, ?, ?, ?, ?)', [
      test.test_id,
      orgId,
      test.agent_id,
      test.created_at,
      this.stored(test),
    ]);
  }

  async getTest(orgId: string, testId: string): Promise<AgentTest | undefined> {
    const row = await this.db.row<{ test: string }>('SELECT test FROM agent_tests WHERE org_id = ? AND test_id = ?', [
      orgId,
      testId,
    ]);
    return row ? this.opened(row.test) : undefined;
  }

  async updateTest(orgId: string, test: AgentTest): Promise<boolean> {
    return (
      (await this.db.run('UPDATE agent_tests SET test = ? WHERE org_id = ? AND test_id = ?', [
        this.stored(test),
        orgId,
        test.test_id,
      ])) === 1
    );
  }

  async deleteTest(orgId: string, testId: string): Promise<boolean> {
    return (await this.db.run('DELETE FROM agent_tests WHERE org_id = ? AND test_id = ?', [orgId, testId])) === 1;
  }

  async listTests(orgId: string, agentId: string): Promise<AgentTest[]> {
    const rows = await this.db.rows<{ test: string }>(
      'SELECT test FROM agent_tests WHERE org_id = ? AND agent_id = ? ORDER BY created_at, seq',
      [orgId, agentId],
    );
    return rows.map((r) => this.opened(r.test));
  }

  async insertRun(orgId: string, run: TestRun, ownerNode: string | null): Promise<void> {
    await this.db.run(
      'INSERT INTO agent_test_runs (run_id, org_id, agent_id, agent_version, status, created_at, run, owner_node) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
      [run.run_id, orgId, run.agent_id, run.agent_version, run.status, run.created_at, JSON.stringify(run), ownerNode],
    );
  }

  async getRun(orgId: string, runId: string): Promise<TestRun | undefined> {
    const row = await this.db.row<{ run: string }>('SELECT run FROM agent_test_runs WHERE org_id = ? AND run_id = ?', [
      orgId,
      runId,
    ]);
    return row ? (JSON.parse(row.run) as TestRun) : undefined;
  }

  updateRun(orgId: string, runId: string, change: (run: TestRun) => TestRun): Promise<TestRun | undefined> {
    return this.db.transaction(async (tx) => {
      const row = await tx.row<{ run: string }>(
        'SELECT run FROM agent_test_runs WHERE org_id = ? AND run_id = ? FOR UPDATE',
        [orgId, runId],
      );
      if (!row) return undefined;
      const next = change(JSON.parse(row.run) as TestRun);
      await tx.run('UPDATE agent_test_runs SET status = ?, run = ? WHERE org_id = ? AND run_id = ?', [
        next.status,
        JSON.stringify(next),
        orgId,
        runId,
      ]);
      return next;
    });
  }

  async listRuns(orgId: string, agentId: string, limit: number): Promise<TestRun[]> {
    const rows = await this.db.rows<{ run: string }>(
      'SELECT run FROM agent_test_runs WHERE org_id = ? AND agent_id = ? ORDER BY created_at DESC, seq DESC LIMIT ?',
      [orgId, agentId, limit],
    );
    return rows.map((r) => JSON.parse(r.run) as TestRun);
  }

  async lastFinishedRunBelow(orgId: string, agentId: string, belowVersion: number): Promise<TestRun | undefined> {
    const row = await this.db.row<{ run: string }>(
      `SELECT run FROM agent_test_runs WHERE org_id = ? AND agent_id = ? AND agent_version < ? AND status != 'running'
       ORDER BY agent_version DESC, created_at DESC, seq DESC LIMIT 1`,
      [orgId, agentId, belowVersion],
    );
    return row ? (JSON.parse(row.run) as TestRun) : undefined;
  }

  async orphanedRuns(liveNodes: string[]): Promise<{ orgId: string; run: TestRun }[]> {
    const rows = await this.db.rows<{ org_id: string; run: string }>(
      "SELECT org_id, run FROM agent_test_runs WHERE status = 'running' AND (owner_node IS NULL OR NOT (owner_node = ANY(?)))",
      [liveNodes],
    );
    return rows.map((r) => ({ orgId: r.org_id, run: JSON.parse(r.run) as TestRun }));
  }
}
