// Sends the outbox: each due delivery is signed and POSTed through the egress-guarded pool with a
// 10 s timeout; a 2xx is delivered, anything else is retried with capped, jittered exponential
// backoff until the attempts run out. A restart picks up where the last process stopped: the
// outbox is the only state.
import type { Clock, RandomHex } from '../clock.ts';
import { jitteredBackoff } from '../net/backoff.ts';
import { readBodyCapped, sendRequest, type Dispatcher } from '../net/http.ts';
import { Watchdog } from '../net/watchdog.ts';
import { realTimers } from '../timers.ts';
import type { DueDelivery, WebhookRepository } from './repository.ts';
import { SIGNATURE_HEADER, signatureHeader } from './signature.ts';

export interface WebhookDeliveryOptions {
  /** Attempts before a delivery is given up as failed. */
  maxAttempts: number;
  /** The first retry's delay; each next one three times longer, jittered, at most `maxDelayMs`. */
  retryBaseMs: number;
  maxDelayMs: number;
  timeoutMs: number;
  /** How often the outbox is looked at when nothing new arrived. */
  pollMs: number;
}

export const WEBHOOK_DEFAULTS: WebhookDeliveryOptions = {
  // 10 s, 30 s, 1.5 min, 4.5 min, 13.5 min, 40 min, 1 h, 1 h: eight attempts over some three hours.
  maxAttempts: 8,
  retryBaseMs: 10_000,
  maxDelayMs: 3_600_000,
  timeoutMs: 10_000,
  pollMs: 1_000,
};

/** Deliveries one pass sends at most. */
const BATCH = 16;
/** A claimed delivery is held from other senders this much past its timeout (after a crash, it waits this long). */
const LEASE_MARGIN_MS = 5_000;

/**
 * Delay before attempt `attempt + 1` (attempt counts from 1): the service's jittered backoff (net/backoff.ts),
 * tripling.
 */
export function retryDelay(
  attempt: number,
  options: Pick<WebhookDeliveryOptions, 'retryBaseMs' | 'maxDelayMs'>,
  random: () => number,
): number {
  return jitteredBackoff(attempt, { baseMs: options.retryBaseMs, maxMs: options.maxDelayMs, factor: 3 }, random);
}

export class WebhookSender {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private again = false;
  private stopped = true;

  constructor(
    private readonly d: {
      repo: WebhookRepository;
      dispatcher: () => Dispatcher;
      clock: Clock;
      random: RandomHex;
      options: WebhookDeliveryOptions;
      log: { warn(obj: object, msg: string): void };
      /** Each attempt's outcome, for metrics. */
      onAttempt?: (outcome: 'delivered' | 'retry' | 'failed') => void;
    },
  ) {}

  start(): void {
    this.stopped = false;
    this.kick();
  }

  /** Something was written to the outbox: send it now rather than at the next poll. */
  kick(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    clearTimeout(this.timer);
    // A pass that fails (the store unavailable) is tried at the next poll again: an unhandled rejection would end the
    // process.
    this.running = this.pass()
      .catch((error: unknown) =>
        this.d.log.warn({ err: error }, 'webhook outbox pass failed; retrying at the next poll'),
      )
      .finally(() => {
        this.running = undefined;
        if (this.stopped) return;
        if (this.again) {
          this.again = false;
          this.kick();
        } else {
          this.timer = setTimeout(() => this.kick(), this.d.options.pollMs);
          this.timer.unref();
        }
      });
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running;
  }

  private async pass(): Promise<void> {
    for (;;) {
      const due = await this.d.repo.claimDue(this.d.clock.now(), this.d.options.timeoutMs + LEASE_MARGIN_MS, BATCH);
      if (due.length === 0) return;
      await Promise.all(due.map((delivery) => this.send(delivery)));
      if (this.stopped) return;
    }
  }

  private async send(delivery: DueDelivery): Promise<void> {
    const at = this.d.clock.now();
    let status: number | null = null;
    let error: string;
    const deadline = new Watchdog(realTimers);
    deadline.arm(this.d.options.timeoutMs);
    try {
      const response = await sendRequest(delivery.url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'user-agent': 'voicecall-webhooks/1',
          [SIGNATURE_HEADER]: signatureHeader(delivery.body, at, delivery.secrets),
        },
        body: delivery.body,
        signal: deadline.signal,
        dispatcher: this.d.dispatcher(),
      });
      status = response.statusCode;
      // Read (a little of) the answer so the connection can be reused.
      await readBodyCapped(response.body, 4096).catch(() => undefined);
      if (status >= 200 && status < 300) {
        await this.d.repo.delivered(delivery.delivery_id, status, this.d.clock.now());
        this.d.onAttempt?.('delivered');
        return;
      }
      error = `the receiver answered HTTP ${status}`;
    } catch {
      // Said without the network's own words: which addresses refuse or time out is not for the record.
      error = deadline.expired
        ? `no answer within ${this.d.options.timeoutMs} ms`
        : 'the receiver could not be reached';
    } finally {
      deadline.close();
    }
    const attempt = delivery.attempts + 1;
    const retryAt =
      attempt >= this.d.options.maxAttempts
        ? null
        : this.d.clock.now() +
          retryDelay(attempt, this.d.options, () => Number.parseInt(this.d.random(4), 16) / 0xffffffff);
    await this.d.repo.attemptFailed(delivery.delivery_id, status, error, retryAt);
    this.d.onAttempt?.(retryAt === null ? 'failed' : 'retry');
    if (retryAt === null)
      this.d.log.warn(
        { delivery_id: delivery.delivery_id, event: delivery.event, call_id: delivery.call_id },
        'webhook delivery given up',
      );
  }
}
