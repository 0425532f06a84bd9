// Webhook settings and the delivery outbox in SQLite. A call's events are written by
// `enqueueCallEvents` inside the transaction that changes its record, so no change is ever
// without its events, whatever happens to the process after the commit.
import type { CallRecord } from '../records/record.ts';
import type { CampaignRow } from '../campaigns/repository.ts';
import { batchView, campaignView } from '../campaigns/service.ts';
import type { RandomHex } from '../clock.ts';
import { callEventsOf, campaignEndedMessage, WEBHOOK_EVENTS, type WebhookEvent } from '../webhooks/events.ts';
import { addressMessages } from '../webhooks/routing.ts';
import type { Delivery, DeliveryQuery, DeliveryStatus, DueDelivery, WebhookSettings } from '../webhooks/repository.ts';
import type { Db } from './database.ts';
import { keysetPage, ListWhere, queryFingerprint } from './paging.ts';

export interface SettingsRow {
  webhook_url: string | null;
  events: string;
  secret: string;
  previous_secret: string | null;
  previous_until: number | null;
}

export interface DeliveryRow {
  seq: number;
  id: string;
  org_id: string;
  event: WebhookEvent;
  call_id: string | null;
  url: string;
  body: string;
  status: DeliveryStatus;
  attempts: number;
  next_attempt_at: number | null;
  last_status: number | null;
  last_error: string | null;
  created_at: number;
  delivered_at: number | null;
}

export const toDelivery = (row: DeliveryRow): Delivery => ({
  delivery_id: row.id,
  event: row.event,
  call_id: row.call_id,
  url: row.url,
  status: row.status,
  attempts: row.attempts,
  last_status: row.last_status,
  last_error: row.last_error,
  created_at: row.created_at,
  next_attempt_at: row.status === 'pending' ? row.next_attempt_at : null,
  delivered_at: row.delivered_at,
});

/** An organization's settings as the API shows them: the previous secret only while it still signs. */
export function settingsOf(row: SettingsRow, now: number): WebhookSettings {
  const current = row.previous_until !== null && row.previous_until > now;
  return {
    webhook_url: row.webhook_url,
    events: JSON.parse(row.events) as WebhookEvent[],
    signing_secret: row.secret,
    previous_secret: current ? row.previous_secret : null,
    previous_valid_until: current ? row.previous_until : null,
  };
}

/** The agent's own webhook_url, when its version names one. */
export function agentWebhookUrl(config: string | undefined): string | null {
  return config ? ((JSON.parse(config) as { webhook_url?: string | null }).webhook_url ?? null) : null;
}

/** A page of an organization's deliveries, newest first, as both stores fetch it. */
export function deliveryListPage(orgId: string, query: DeliveryQuery) {
  const where = new ListWhere('org_id = ?', orgId)
    .anyOf('status', query.status)
    .anyOf('event', query.event)
    .anyOf('call_id', query.call_id);
  return {
    where: where.sql,
    params: where.params,
    order: 'descending' as const,
    sortColumn: 'created_at',
    idColumn: 'id',
    limit: query.limit,
    paginationKey: query.paginationKey,
    fingerprint: queryFingerprint(['deliveries', query.status, query.event, query.call_id]),
    cursorOf: (row: DeliveryRow) => ({ sortKey: row.created_at, id: row.id }),
  };
}

export class SqliteWebhookRepository {
  constructor(
    private readonly db: Db,
    private readonly random: RandomHex,
    private readonly now: () => number,
    /** Told (after the transaction) that deliveries were queued, so they go out at once. */
    private readonly queued: () => void = () => undefined,
  ) {}

  settings(orgId: string): WebhookSettings {
    let row = this.db
      .prepare(
        'SELECT webhook_url, events, secret, previous_secret, previous_until FROM webhook_settings WHERE org_id = ?',
      )
      .get(orgId) as SettingsRow | undefined;
    if (!row) {
      this.db
        .prepare(
          'INSERT INTO webhook_settings (org_id, webhook_url, events, secret, updated_at) VALUES (?, NULL, ?, ?, ?) ON CONFLICT (org_id) DO NOTHING',
        )
        .run(orgId, JSON.stringify(WEBHOOK_EVENTS), this.newSecret(), this.now());
      row = this.db
        .prepare(
          'SELECT webhook_url, events, secret, previous_secret, previous_until FROM webhook_settings WHERE org_id = ?',
        )
        .get(orgId) as SettingsRow;
    }
    return settingsOf(row, this.now());
  }

  updateSettings(
    orgId: string,
    change: { webhook_url?: string | null | undefined; events?: WebhookEvent[] | undefined },
  ): WebhookSettings {
    const current = this.settings(orgId);
    this.db
      .prepare('UPDATE webhook_settings SET webhook_url = ?, events = ?, updated_at = ? WHERE org_id = ?')
      .run(
        change.webhook_url === undefined ? current.webhook_url : change.webhook_url,
        JSON.stringify(change.events ?? current.events),
        this.now(),
        orgId,
      );
    return this.settings(orgId);
  }

  rotateSecret(orgId: string, until: number): WebhookSettings {
    const current = this.settings(orgId);
    this.db
      .prepare(
        'UPDATE webhook_settings SET secret = ?, previous_secret = ?, previous_until = ?, updated_at = ? WHERE org_id = ?',
      )
      .run(this.newSecret(), current.signing_secret, until, this.now(), orgId);
    return this.settings(orgId);
  }

  /**
   * Inside the transaction that changed a call's record: its events, addressed by the one rule
   * of webhooks/routing.ts.
   */
  enqueueCallEvents(orgId: string, before: CallRecord, after: CallRecord): void {
    const messages = callEventsOf(before, after);
    if (messages.length === 0) return;
    const agent = this.db
      .prepare('SELECT config FROM agent_versions WHERE org_id = ? AND agent_id = ? AND version = ?')
      .get(orgId, after.agent_id, after.agent_version ?? -1) as { config: string } | undefined;
    const addressed = addressMessages(messages, agentWebhookUrl(agent?.config), this.settings(orgId));
    if (addressed.length === 0) return;
    const now = this.now();
    const insert = this.db.prepare(
      "INSERT INTO webhook_deliveries (id, org_id, event, call_id, url, body, status, next_attempt_at, created_at) VALUES (?, ?, ?, ?, ?, ?, 'pending', ?, ?)",
    );
    for (const message of addressed)
      insert.run(`wh_${this.random(16)}`, orgId, message.event, after.call_id, message.url, message.body, now, now);
    // Not from inside the transaction: the sender claims in a transaction of its own.
    setImmediate(this.queued);
  }

  /** Inside the transaction that ended a campaign or batch: campaign_ended, as its API shows it. */
  enqueueCampaignEnded(campaign: CampaignRow, callIds: string[]): void {
    const agent = this.db
      .prepare('SELECT config FROM agent_versions WHERE org_id = ? AND agent_id = ? AND version = ?')
      .get(campaign.orgId, campaign.agentId, campaign.agentVersion) as { config: string } | undefined;
    const view = campaign.kind === 'batch' ? batchView(campaign, callIds) : campaignView(campaign);
    const [message] = addressMessages(
      [campaignEndedMessage(view)],
      agentWebhookUrl(agent?.config),
      this.settings(campaign.orgId),
    );
    if (!message) return;
    const now = this.now();
    this.db
      .prepare(
        "INSERT INTO webhook_deliveries (id, org_id, event, call_id, url, body, status, next_attempt_at, created_at) VALUES (?, ?, 'campaign_ended', NULL, ?, ?, 'pending', ?, ?)",
      )
      .run(`wh_${this.random(16)}`, campaign.orgId, message.url, message.body, now, now);
    setImmediate(this.queued);
  }

  claimDue(now: number, leaseMs: number, limit: number): DueDelivery[] {
    return this.db
      .transaction(() => {
        // The oldest pending delivery of each call only: a call's events arrive in order.
        const rows = this.db
          .prepare(
            `SELECT * FROM webhook_deliveries d
             WHERE d.status = 'pending' AND d.next_attempt_at <= ? AND d.claimed_until <= ?
               AND (d.call_id IS NULL OR NOT EXISTS (
                 SELECT 1 FROM webhook_deliveries e WHERE e.call_id = d.call_id AND e.status = 'pending' AND e.seq < d.seq))
             ORDER BY d.next_attempt_at, d.seq LIMIT ?`,
          )
          .all(now, now, limit) as DeliveryRow[];
        const claim = this.db.prepare('UPDATE webhook_deliveries SET claimed_until = ? WHERE seq = ?');
        return rows.map((row) => {
          claim.run(now + leaseMs, row.seq);
          const settings = this.settings(row.org_id);
          const secrets = [settings.signing_secret, ...(settings.previous_secret ? [settings.previous_secret] : [])];
          return { ...toDelivery(row), org_id: row.org_id, body: row.body, secrets };
        });
      })
      .immediate();
  }

  delivered(id: string, status: number, at: number): void {
    this.db
      .prepare(
        "UPDATE webhook_deliveries SET status = 'delivered', attempts = attempts + 1, last_status = ?, last_error = NULL, delivered_at = ?, claimed_until = 0 WHERE id = ?",
      )
      .run(status, at, id);
  }

  attemptFailed(id: string, status: number | null, error: string, retryAt: number | null): void {
    this.db
      .prepare(
        'UPDATE webhook_deliveries SET status = ?, attempts = attempts + 1, last_status = ?, last_error = ?, next_attempt_at = ?, claimed_until = 0 WHERE id = ?',
      )
      .run(retryAt === null ? 'failed' : 'pending', status, error, retryAt, id);
  }

  list(orgId: string, query: DeliveryQuery): { deliveries: Delivery[]; nextCursor: string | null } {
    const page = keysetPage<DeliveryRow>({
      ...deliveryListPage(orgId, query),
      fetch: (clause, values, order, limit) =>
        this.db
          .prepare(`SELECT * FROM webhook_deliveries WHERE ${clause} ${order} LIMIT ?`)
          .all(...values, limit) as DeliveryRow[],
    });
    return { deliveries: page.rows.map(toDelivery), nextCursor: page.nextCursor };
  }

  backlog(): number {
    return (
      this.db.prepare("SELECT count(*) AS n FROM webhook_deliveries WHERE status = 'pending'").get() as { n: number }
    ).n;
  }

  redeliver(orgId: string, id: string, now: number): Delivery | undefined {
    this.db
      .prepare(
        "UPDATE webhook_deliveries SET status = 'pending', next_attempt_at = ?, claimed_until = 0, delivered_at = NULL WHERE org_id = ? AND id = ?",
      )
      .run(now, orgId, id);
    const row = this.db.prepare('SELECT * FROM webhook_deliveries WHERE org_id = ? AND id = ?').get(orgId, id) as
      DeliveryRow | undefined;
    return row ? toDelivery(row) : undefined;
  }

  private newSecret(): string {
    return `whsec_${this.random(24)}`;
  }
}
