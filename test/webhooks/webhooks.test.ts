import { Agent } from 'undici';
import { describe, expect, it, vi } from 'vitest';
import { registeredRecord, type CallRecord } from '../../src/records/record.ts';
import { retryDelay, WebhookSender, WEBHOOK_DEFAULTS } from '../../src/webhooks/dispatcher.ts';
import type { WebhookRepository } from '../../src/webhooks/repository.ts';
import { callEventsOf } from '../../src/webhooks/events.ts';
import { signatureHeader, verifySignature } from '../../src/webhooks/signature.ts';

const registered = registeredRecord({
  call_id: 'call_1',
  agent_id: 'a',
  agent_version: 1,
  call_type: 'inbound',
  call_from: null,
  call_to: null,
});
const ongoing: CallRecord = { ...registered, call_status: 'ongoing', start_timestamp: 1 };
const ended: CallRecord = { ...ongoing, call_status: 'ended', disconnection_reason: 'user_hangup' };
const analysis = { summary: 's', user_sentiment: 'neutral' as const, custom_analysis_data: [] };

describe('webhook events of a record change', () => {
  it('connecting is call_started, ending is call_ended without the analysis, the analysis is call_analyzed', () => {
    expect(callEventsOf(registered, ongoing).map((m) => m.event)).toEqual(['call_started']);
    expect(callEventsOf(ongoing, ended).map((m) => m.event)).toEqual(['call_ended']);
    expect(callEventsOf(ended, { ...ended, call_analysis: analysis }).map((m) => m.event)).toEqual(['call_analyzed']);
    expect(callEventsOf(ongoing, { ...ongoing, transcript: [] })).toEqual([]);
  });

  it('a call that never connected gets call_ended only', () => {
    const events = callEventsOf(registered, {
      ...registered,
      call_status: 'not_connected',
      disconnection_reason: 'dial_no_answer',
    });
    expect(events.map((m) => m.event)).toEqual(['call_ended']);
    expect(JSON.parse(events[0]!.body)).toMatchObject({
      event: 'call_ended',
      call: { call_id: 'call_1', call_analysis: null },
    });
  });
});

describe('x-signature', () => {
  const body = '{"event":"call_ended"}';
  it('is v=<ms>,d=HMAC-SHA256(secret, body + ms), one d= per signing secret', () => {
    const header = signatureHeader(body, 1_700_000_000_000, ['whsec_a', 'whsec_b']);
    expect(header).toMatch(/^v=1700000000000,d=[0-9a-f]{64},d=[0-9a-f]{64}$/);
    expect(verifySignature(body, header, 'whsec_a', 1_700_000_000_000)).toBe(true);
    expect(verifySignature(body, header, 'whsec_b', 1_700_000_000_000)).toBe(true);
    expect(verifySignature(body, header, 'whsec_c', 1_700_000_000_000)).toBe(false);
    expect(verifySignature(`${body} `, header, 'whsec_a', 1_700_000_000_000)).toBe(false);
  });

  it('is refused more than five minutes off the receiver’s clock', () => {
    const header = signatureHeader(body, 0, ['whsec_a']);
    expect(verifySignature(body, header, 'whsec_a', 5 * 60_000)).toBe(true);
    expect(verifySignature(body, header, 'whsec_a', 5 * 60_000 + 1)).toBe(false);
  });
});

describe('retry delays', () => {
  it('grow threefold from the base, jittered to half-to-all of the step, capped; by default at least five attempts spanning over ten minutes', () => {
    const base = { retryBaseMs: 10_000, maxDelayMs: 3_600_000 };
    expect(retryDelay(1, base, () => 1)).toBe(10_000);
    expect(retryDelay(1, base, () => 0)).toBe(5_000);
    expect(retryDelay(3, base, () => 1)).toBe(90_000);
    expect(retryDelay(20, base, () => 1)).toBe(3_600_000);
    expect(WEBHOOK_DEFAULTS.maxAttempts).toBeGreaterThanOrEqual(5);
    // The shortest the retries can span (every jitter at its least): still over ten minutes.
    let span = 0;
    for (let attempt = 1; attempt < WEBHOOK_DEFAULTS.maxAttempts; attempt++)
      span += retryDelay(attempt, WEBHOOK_DEFAULTS, () => 0);
    expect(span).toBeGreaterThan(10 * 60_000);
  });
});

describe('the webhook sender', () => {
  it('a pass the store fails is logged and tried again at the next poll, never an unhandled rejection', async () => {
    let failures = 1;
    const claimed: number[] = [];
    const repo = {
      claimDue: (now: number) => {
        claimed.push(now);
        if (failures-- > 0) throw new TypeError('The database connection is not open');
        return [];
      },
    } as unknown as WebhookRepository;
    const warnings: string[] = [];
    const sender = new WebhookSender({
      repo,
      dispatcher: () => new Agent(),
      clock: { now: () => 1 },
      random: (n) => '0'.repeat(n * 2),
      options: { ...WEBHOOK_DEFAULTS, pollMs: 20 },
      log: { warn: (_obj, msg) => warnings.push(msg) },
    });
    const unhandled = vi.fn();
    process.on('unhandledRejection', unhandled);
    try {
      sender.start();
      await vi.waitFor(() => expect(claimed.length).toBeGreaterThanOrEqual(2), { timeout: 2_000, interval: 10 });
      await sender.stop();
      expect(warnings).toEqual(['webhook outbox pass failed; retrying at the next poll']);
      expect(unhandled).not.toHaveBeenCalled();
    } finally {
      process.off('unhandledRejection', unhandled);
    }
  });
});
