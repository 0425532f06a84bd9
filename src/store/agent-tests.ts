// Agent tests and runs on SQLite: each a JSON document under the columns it is found by.
import { AGENT_TEST_SECRETS, type AgentTest, type TestRun } from '../agent-tests/schema.ts';
import type { SecretBox } from '../secrets/sealed.ts';
import type { Db } from './database.ts';

export class SqliteAgentTestRepository {
  constructor(
    private readonly db: Db,
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

  insertTest(orgId: string, test: AgentTest): void {
    this.db
      .prepare('INSERT INTO agent_tests (test_id, org_id, agent_id, created_at, test) VALUES (?, ?, ?, ?, ?)')
      .run(test.test_id, orgId, test.agent_id, test.created_at, this.stored(test));
  }

  getTest(orgId: string, testId: string): AgentTest | undefined {
    const row = this.db.prepare('SELECT test FROM agent_tests WHERE org_id = ? AND test_id = ?').get(orgId, testId) as
      { test: string } | undefined;
    return row ? this.opened(row.test) : undefined;
  }

  updateTest(orgId: string, test: AgentTest): boolean {
    return (
      this.db
        .prepare('UPDATE agent_tests SET test = ? WHERE org_id = ? AND test_id = ?')
        .run(this.stored(test), orgId, test.test_id).changes === 1
    );
  }

  deleteTest(orgId: string, testId: string): boolean {
    return this.db.prepare('DELETE FROM agent_tests WHERE org_id = ? AND test_id = ?').run(orgId, testId).changes === 1;
  }

  listTests(orgId: string, agentId: string): AgentTest[] {
    const rows = this.db
      .prepare('SELECT test FROM agent_tests WHERE org_id = ? AND agent_id = ? ORDER BY created_at, rowid')
      .all(orgId, agentId) as { test: string }[];
    return rows.map((r) => this.opened(r.test));
  }

  insertRun(orgId: string, run: TestRun, ownerNode: string | null): void {
    this.db
      .prepare(
        'INSERT INTO agent_test_runs (run_id, org_id, agent_id, agent_version, status, created_at, run, owner_node) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
      )
      .run(
        run.run_id,
        orgId,
        run.agent_id,
        run.agent_version,
        run.status,
        run.created_at,
        JSON.stringify(run),
        ownerNode,
      );
  }

  getRun(orgId: string, runId: string): TestRun | undefined {
    const row = this.db.prepare('SELECT run FROM agent_test_runs WHERE org_id = ? AND run_id = ?').get(orgId, runId) as
      { run: string } | undefined;
    return row ? (JSON.parse(row.run) as TestRun) : undefined;
  }

  updateRun(orgId: string, runId: string, change: (run: TestRun) => TestRun): TestRun | undefined {
    return this.db
      .transaction(() => {
        const current = this.getRun(orgId, runId);
        if (!current) return undefined;
        const next = change(current);
        this.db
          .prepare('UPDATE agent_test_runs SET status = ?, run = ? WHERE org_id = ? AND run_id = ?')
          .run(next.status, JSON.stringify(next), orgId, runId);
        return next;
      })
      .immediate();
  }

  listRuns(orgId: string, agentId: string, limit: number): TestRun[] {
    const rows = this.db
      .prepare(
        'SELECT run FROM agent_test_runs WHERE org_id = ? AND agent_id = ? ORDER BY created_at DESC, rowid DESC LIMIT ?',
      )
      .all(orgId, agentId, limit) as { run: string }[];
    return rows.map((r) => JSON.parse(r.run) as TestRun);
  }

  lastFinishedRunBelow(orgId: string, agentId: string, belowVersion: number): TestRun | undefined {
    const row = this.db
      .prepare(
        `SELECT run FROM agent_test_runs WHERE org_id = ? AND agent_id = ? AND agent_version < ? AND status != 'running'
         ORDER BY agent_version DESC, created_at DESC, rowid DESC LIMIT 1`,
      )
      .get(orgId, agentId, belowVersion) as { run: string } | undefined;
    return row ? (JSON.parse(row.run) as TestRun) : undefined;
  }

  orphanedRuns(liveNodes: string[]): { orgId: string; run: TestRun }[] {
    const rows = this.db
      .prepare(
        `SELECT org_id, run FROM agent_test_runs WHERE status = 'running' AND (owner_node IS NULL OR owner_node NOT IN (${liveNodes.map(() => '?').join(', ')}))`,
      )
      .all(...liveNodes) as { org_id: string; run: string }[];
    return rows.map((r) => ({ orgId: r.org_id, run: JSON.parse(r.run) as TestRun }));
  }
}
