// Where webhook settings and the delivery outbox are kept; the store implements this, and writes
// a call's events into the outbox in the same transaction as the record's change.
import type { WebhookEvent } from './events.ts';

export const DELIVERY_STATUSES = ['pending', 'delivered', 'failed'] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

export interface WebhookSettings {
  webhook_url: string | null;
  events: WebhookEvent[];
  signing_secret: string;
  /** The secret before the last rotation, still signing until `previous_valid_until` (epoch ms). */
  previous_secret: string | null;
  previous_valid_until: number | null;
}

export interface Delivery {
  delivery_id: string;
  event: WebhookEvent;
  call_id: string | null;
  url: string;
  status: DeliveryStatus;
  attempts: number;
  last_status: number | null;
  last_error: string | null;
  created_at: number;
  next_attempt_at: number | null;
  delivered_at: number | null;
}

/** A delivery claimed for sending: what to send, and the secrets to sign with. */
export interface DueDelivery extends Delivery {
  org_id: string;
  body: string;
  secrets: string[];
}

export interface DeliveryQuery {
  status?: DeliveryStatus[] | undefined;
  event?: WebhookEvent[] | undefined;
  call_id?: string[] | undefined;
  limit: number;
  paginationKey?: string | null | undefined;
}

export interface WebhookRepository {
  /** The organization's settings, made (with a fresh secret) the first time they are asked for. */
  settings(orgId: string): Promise<WebhookSettings>;
  updateSettings(
    orgId: string,
    change: { webhook_url?: string | null | undefined; events?: WebhookEvent[] | undefined },
  ): Promise<WebhookSettings>;
  /** A new secret; the old one keeps signing beside it until `until`. */
  rotateSecret(orgId: string, until: number): Promise<WebhookSettings>;
  /**
   * Claims up to `limit` due deliveries (each the oldest unsent one of its call, so a call's events
   * go out in order) for `leaseMs`: another claim skips them until then.
   */
  claimDue(now: number, leaseMs: number, limit: number): Promise<DueDelivery[]>;
  delivered(id: string, status: number, at: number): Promise<void>;
  /** A failed attempt: retried at `retryAt`, or given up (failed) when it is null. */
  attemptFailed(id: string, status: number | null, error: string, retryAt: number | null): Promise<void>;
  list(orgId: string, query: DeliveryQuery): Promise<{ deliveries: Delivery[]; nextCursor: string | null }>;
  /** Deliveries waiting to be sent or retried, over every organization. */
  backlog(): Promise<number>;
  /** Sends a delivery again from now, whatever its state; undefined for an unknown id. */
  redeliver(orgId: string, id: string, now: number): Promise<Delivery | undefined>;
}
