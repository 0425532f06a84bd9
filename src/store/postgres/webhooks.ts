// Webhook settings and the delivery outbox on PostgreSQL. Deliveries are written in the
// transaction that changed the call (or ended the campaign); senders on any node claim due ones
// with SELECT … FOR UPDATE SKIP LOCKED, so no delivery goes to two senders at once.
import type { CallRecord } from '../../records/record.ts';
import type { CampaignRow } from '../../campaigns/repository.ts';
import { batchView, campaignView } from '../../campaigns/service.ts';
import type { RandomHex } from '../../clock.ts';
import { callEventsOf, campaignEndedMessage, WEBHOOK_EVENTS, type WebhookEvent } from '../../webhooks/events.ts';
import { addressMessages } from '../../webhooks/routing.ts';
import type {
  Delivery,
  DeliveryQuery,
  DueDelivery,
  WebhookRepository,
  WebhookSettings,
} from '../../webhooks/repository.ts';
import { keysetPageAsync } from '../paging.ts';
import {
  agentWebhookUrl,
  deliveryListPage,
  settingsOf,
  toDelivery,
  type DeliveryRow,
  type SettingsRow,
} from '../webhooks.ts';
import type { PgDb, Queryable } from './db.ts';

const SETTINGS =
  'SELECT webhook_url, events, secret, previous_secret, previous_until FROM webhook_settings WHERE org_id = ?';

export class PgWebhookRepository implements WebhookRepository {
  constructor(
    private readonly db: PgDb,
    private readonly random: RandomHex,
    private readonly now: () => number,
    /** Told (after the transaction) that deliveries were queued, so they go out at once. */
    private readonly queued: () => void = () => undefined,
  ) {}

  settings(orgId: string): Promise<WebhookSettings> {
    return this.settingsOn(this.db, orgId);
  }

  private async settingsOn(q: Queryable, orgId: string): Promise<WebhookSettings> {
    let row = await q.row<SettingsRow>(SETTINGS, [orgId]);
    if (!row) {
      await q.run(
        'INSERT INTO webhook_settings (org_id, webhook_url, events, secret, updated_at) VALUES (?, NULL, ?, ?, ?) ON CONFLICT (org_id) DO NOTHING',
        [orgId, JSON.stringify(WEBHOOK_EVENTS), this.newSecret(), this.now()],
      );
      row = (await q.row<SettingsRow>(SETTINGS, [orgId]))!;
    }
    return settingsOf(row, this.now());
  }

  async updateSettings(
    orgId: string,
    change: { webhook_url?: string | null | undefined; events?: WebhookEvent[] | undefined },
  ): Promise<WebhookSettings> {
    const current = await this.settings(orgId);
    await this.db.run('UPDATE webhook_settings SET webhook_url = ?, events = ?, updated_at = ? WHERE org_id = ?', [
      change.webhook_url === undefined ? current.webhook_url : change.webhook_url,
      JSON.stringify(change.events ?? current.events),
      this.now(),
      orgId,
    ]);
    return this.settings(orgId);
  }

  async rotateSecret(orgId: string, until: number): Promise<WebhookSettings> {
    const current = await this.settings(orgId);
    await this.db.run(
      'UPDATE webhook_settings SET secret = ?, previous_secret = ?, previous_until = ?, updated_at = ? WHERE org_id = ?',
      [this.newSecret(), current.signing_secret, until, this.now(), orgId],
    );
    return this.settings(orgId);
  }

  /** In the transaction that changed a call's record: its events, addressed by the one rule of webhooks/routing.ts. */
  async enqueueCallEvents(tx: Queryable, orgId: string, before: CallRecord, after: CallRecord): Promise<void> {
    const messages = callEventsOf(before, after);
    if (messages.length === 0) return;
    const agent = await tx.row<{ config: string }>(
      'SELECT config FROM agent_versions WHERE org_id = ? AND agent_id = ? AND version = ?',
      [orgId, after.agent_id, after.agent_version ?? -1],
    );
    const addressed = addressMessages(messages, agentWebhookUrl(agent?.config), await this.settingsOn(tx, orgId));
    if (addressed.length === 0) return;
    const now = this.now();
    for (const message of addressed) {
      await tx.run(
        "INSERT INTO webhook_deliveries (id, org_id, event, call_id, url, body, status, next_attempt_at, created_at) VALUES (?, ?, ?, ?, ?, ?, 'pending', ?, ?)",
        [`wh_${this.random(16)}`, orgId, message.event, after.call_id, message.url, message.body, now, now],
      );
    }
    // Once the transaction has committed, in all likelihood: the sender claims in a transaction of its own.
    setImmediate(this.queued);
  }

  /** In the transaction that ended a campaign or batch: campaign_ended, as its API shows it. */
  async enqueueCampaignEnded(tx: Queryable, campaign: CampaignRow, callIds: string[]): Promise<void> {
    const agent = await tx.row<{ config: string }>(
      'SELECT config FROM agent_versions WHERE org_id = ? AND agent_id = ? AND version = ?',
      [campaign.orgId, campaign.agentId, campaign.agentVersion],
    );
    const view = campaign.kind === 'batch' ? batchView(campaign, callIds) : campaignView(campaign);
    const [message] = addressMessages(
      [campaignEndedMessage(view)],
      agentWebhookUrl(agent?.config),
      await this.settingsOn(tx, campaign.orgId),
    );
    if (!message) return;
    const now = this.now();
    await tx.run(
      "INSERT INTO webhook_deliveries (id, org_id, event, call_id, url, body, status, next_attempt_at, created_at) VALUES (?, ?, 'campaign_ended', NULL, ?, ?, 'pending', ?, ?)",
      [`wh_${this.random(16)}`, campaign.orgId, message.url, message.body, now, now],
    );
    setImmediate(this.queued);
  }

  claimDue(now: number, leaseMs: number, limit: number): Promise<DueDelivery[]> {
    return this.db.transaction(async (tx) => {
      // The oldest pending delivery of each call only: a call's events arrive in order.
      const rows = await tx.rows<DeliveryRow>(
        `SELECT * FROM webhook_deliveries d
         WHERE d.status = 'pending' AND d.next_attempt_at <= ? AND d.claimed_until <= ?
           AND (d.call_id IS NULL OR NOT EXISTS (
             SELECT 1 FROM webhook_deliveries e WHERE e.call_id = d.call_id AND e.status = 'pending' AND e.seq < d.seq))
         ORDER BY d.next_attempt_at, d.seq LIMIT ? FOR UPDATE SKIP LOCKED`,
        [now, now, limit],
      );
      const due: DueDelivery[] = [];
      for (const row of rows) {
        await tx.run('UPDATE webhook_deliveries SET claimed_until = ? WHERE seq = ?', [now + leaseMs, row.seq]);
        const settings = await this.settingsOn(tx, row.org_id);
        const secrets = [settings.signing_secret, ...(settings.previous_secret ? [settings.previous_secret] : [])];
        due.push({ ...toDelivery(row), org_id: row.org_id, body: row.body, secrets });
      }
      return due;
    });
  }

  async delivered(id: string, status: number, at: number): Promise<void> {
    await this.db.run(
      "UPDATE webhook_deliveries SET status = 'delivered', attempts = attempts + 1, last_status = ?, last_error = NULL, delivered_at = ?, claimed_until = 0 WHERE id = ?",
      [status, at, id],
    );
  }

  async attemptFailed(id: string, status: number | null, error: string, retryAt: number | null): Promise<void> {
    await this.db.run(
      'UPDATE webhook_deliveries SET status = ?, attempts = attempts + 1, last_status = ?, last_error = ?, next_attempt_at = ?, claimed_until = 0 WHERE id = ?',
      [retryAt === null ? 'failed' : 'pending', status, error, retryAt, id],
    );
  }

  async list(orgId: string, query: DeliveryQuery): Promise<{ deliveries: Delivery[]; nextCursor: string | null }> {
    const page = await keysetPageAsync<DeliveryRow>({
      ...deliveryListPage(orgId, query),
      fetch: (clause, values, order, limit) =>
        this.db.rows<DeliveryRow>(`SELECT * FROM webhook_deliveries WHERE ${clause} ${order} LIMIT ?`, [
          ...values,
          limit,
        ]),
    });
    return { deliveries: page.rows.map(toDelivery), nextCursor: page.nextCursor };
  }

  async backlog(): Promise<number> {
    return (
      (await this.db.row<{ n: number }>("SELECT count(*) AS n FROM webhook_deliveries WHERE status = 'pending'"))?.n ??
      0
    );
  }

  async redeliver(orgId: string, id: string, now: number): Promise<Delivery | undefined> {
    await this.db.run(
      "UPDATE webhook_deliveries SET status = 'pending', next_attempt_at = ?, claimed_until = 0, delivered_at = NULL WHERE org_id = ? AND id = ?",
      [now, orgId, id],
    );
    const row = await this.db.row<DeliveryRow>('SELECT * FROM webhook_deliveries WHERE org_id = ? AND id = ?', [
      orgId,
      id,
    ]);
    return row ? toDelivery(row) : undefined;
  }

  private newSecret(): string {
    return `whsec_${this.random(24)}`;
  }
}
