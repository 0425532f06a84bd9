// Webhooks end to end: a real phone call through the embedded engines, its events through the
// durable outbox to a real receiver that fails before it accepts, each verified as signed.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CallRecord } from '../../src/records/record.ts';
import { verifySignature } from '../../src/webhooks/signature.ts';
import { agentFinished, placeInboundCall } from '../helpers/phone.ts';
import { startTestService, type TestService } from '../helpers/service.ts';

interface Received {
  event: string;
  call: CallRecord;
  body: string;
  signature: string;
  answered: number;
}

/** A receiver that answers 500 to the first `failures` requests, then 200. */
async function receiver(
  failures: number,
): Promise<{ url: string; received: Received[]; server: Server; setFailures(n: number): void }> {
  const received: Received[] = [];
  let left = failures;
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (d: Buffer) => (body += d.toString()));
    req.on('end', () => {
      const answered = left > 0 ? 500 : 200;
      if (left > 0) left--;
      const parsed = JSON.parse(body) as { event: string; call: CallRecord };
      received.push({
        event: parsed.event,
        call: parsed.call,
        body,
        signature: String(req.headers['x-signature']),
        answered,
      });
      res.writeHead(answered).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`,
    received,
    server,
    setFailures: (n) => (left = n),
  };
}

async function until<T>(check: () => T | undefined | Promise<T | undefined>, what: string, ms = 30_000): Promise<T> {
  const started = Date.now();
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== false) return value;
    if (Date.now() - started > ms) throw new Error(`never: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

const NUMBER = '+15550900001';
const FAST = { WEBHOOK_RETRY_BASE_MS: '100' };

async function phoneAgent(t: TestService): Promise<void> {
  const demo = (await t.request('GET', '/v2/agents/demo')).body as Record<string, unknown>;
  const { agent_id: _id, version: _v, is_published: _p, last_modified: _m, ...config } = demo;
  expect(
    (await t.request('POST', '/v2/agents', { body: { ...config, agent_id: 'hooked', inbound_numbers: [NUMBER] } }))
      .status,
  ).toBe(201);
}

async function shortCall(t: TestService): Promise<string> {
  const { caller, callId } = await placeInboundCall(t.url, NUMBER);
  await agentFinished(caller, { after: 0, timeoutMs: 20_000 });
  await caller.hangUp();
  return callId;
}

describe('webhooks', () => {
  let t: TestService;
  let hook: Awaited<ReturnType<typeof receiver>>;
  let secret: string;

  beforeAll(async () => {
    hook = await receiver(2);
    t = await startTestService({ ...FAST, METRICS: 'public' });
    await phoneAgent(t);
    const put = await t.request('PUT', '/v2/webhook-settings', { body: { webhook_url: hook.url } });
    expect(put.status, put.text).toBe(200);
    secret = (put.body as { signing_secret: string }).signing_secret;
    expect(secret).toMatch(/^whsec_[0-9a-f]{48}$/);
  }, 60_000);
  afterAll(async () => {
    await t?.stop();
    hook?.server.close();
  });

  it('a receiver that fails twice then accepts gets every event of the call, in order, each exactly as signed', async () => {
    const callId = await shortCall(t);
    const accepted = await until(() => {
      const ok = hook.received.filter((r) => r.call?.call_id === callId && r.answered === 200);
      return ok.length >= 3 ? ok : undefined;
    }, 'three accepted events');
    const ofCall = hook.received.filter((r) => r.call?.call_id === callId);
    // The failed attempts were the first event's: nothing later went out before it was accepted.
    expect(ofCall.map((r) => `${r.event}:${r.answered}`)).toEqual([
      'call_started:500',
      'call_started:500',
      'call_started:200',
      'call_ended:200',
      'call_analyzed:200',
    ]);
    expect(accepted.map((r) => r.event)).toEqual(['call_started', 'call_ended', 'call_analyzed']);
    for (const r of ofCall) expect(verifySignature(r.body, r.signature, secret, Date.now()), r.event).toBe(true);
    expect(verifySignature(accepted[0]!.body, accepted[0]!.signature, 'whsec_wrong', Date.now())).toBe(false);
    expect(accepted[1]!.call).toMatchObject({
      call_status: 'ended',
      disconnection_reason: 'user_hangup',
      call_analysis: null,
    });
    expect(accepted[2]!.call.call_analysis).not.toBeNull();

    const list = await t.request('POST', '/v2/webhook-deliveries/list', {
      body: { filter_criteria: { call_id: [callId] } },
    });
    const deliveries = (
      list.body as { deliveries: { event: string; status: string; attempts: number; last_status: number }[] }
    ).deliveries;
    expect(deliveries.map((d) => [d.event, d.status, d.attempts, d.last_status]).sort()).toEqual([
      ['call_analyzed', 'delivered', 1, 200],
      ['call_ended', 'delivered', 1, 200],
      ['call_started', 'delivered', 3, 200],
    ]);
    // The attempts are counted for Prometheus; nothing is left waiting.
    const metrics = await (await fetch(`${t.url}/metrics`)).text();
    expect(metrics).toMatch(/^voicecall_webhook_deliveries_total\{outcome="retry"\} 2$/m);
    expect(metrics).toMatch(/^voicecall_webhook_deliveries_total\{outcome="delivered"\} 3$/m);
    expect(metrics).toMatch(/^voicecall_webhook_backlog 0$/m);
    // Another organization sees none of them.
    const other = await t.request('POST', '/v2/webhook-deliveries/list', {
      body: { filter_criteria: { call_id: [callId] } },
      key: t.keyOf('globex'),
    });
    expect((other.body as { deliveries: unknown[] }).deliveries).toEqual([]);
  }, 90_000);

  it('after a rotation both secrets sign for a day: two d= values, each verifying', async () => {
    const rotated = (await t.request('POST', '/v2/webhook-settings/rotate-secret')).body as {
      signing_secret: string;
      previous_secret_valid_until: number;
    };
    expect(rotated.signing_secret).not.toBe(secret);
    expect(rotated.previous_secret_valid_until).toBeGreaterThan(Date.now() + 23 * 3_600_000);
    const callId = await shortCall(t);
    const started = await until(
      () => hook.received.find((r) => r.call?.call_id === callId && r.answered === 200),
      'the new call started event',
    );
    expect(started.signature.split(',').filter((p) => p.startsWith('d='))).toHaveLength(2);
    expect(verifySignature(started.body, started.signature, rotated.signing_secret, Date.now())).toBe(true);
    expect(verifySignature(started.body, started.signature, secret, Date.now())).toBe(true);
  }, 90_000);

  it('redeliver sends a delivery again, and the events setting filters what is sent', async () => {
    const list = await t.request('POST', '/v2/webhook-deliveries/list', {
      body: { filter_criteria: { event: ['call_ended'], status: ['delivered'] }, limit: 1 },
    });
    const [latest] = (list.body as { deliveries: { delivery_id: string; call_id: string }[] }).deliveries;
    const before = hook.received.length;
    const again = await t.request('POST', `/v2/webhook-deliveries/${latest!.delivery_id}/redeliver`);
    expect(again.status).toBe(200);
    await until(
      () => hook.received.slice(before).find((r) => r.event === 'call_ended' && r.call?.call_id === latest!.call_id),
      'the redelivery',
    );
    expect((await t.request('POST', '/v2/webhook-deliveries/wh_unknown/redeliver')).status).toBe(404);

    expect((await t.request('PUT', '/v2/webhook-settings', { body: { events: ['call_ended'] } })).status).toBe(200);
    const callId = await shortCall(t);
    await until(() => hook.received.find((r) => r.call?.call_id === callId), 'the filtered call event');
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(hook.received.filter((r) => r.call?.call_id === callId).map((r) => r.event)).toEqual(['call_ended']);
  }, 90_000);

  it('a batch that ends sends campaign_ended with the batch as the API shows it', async () => {
    expect((await t.request('PUT', '/v2/webhook-settings', { body: { events: ['campaign_ended'] } })).status).toBe(200);
    // No carrier in this service: the batch's one call fails at once, and so the batch ends.
    const ack = await t.request('POST', '/v1/create-outbound-batch-call', {
      body: { name: 'Night', call_from: '+14155550100', agent_id: 'hooked', tasks: [{ call_to: '+14155550111' }] },
    });
    expect(ack.status, ack.text).toBe(201);
    const batchId = (ack.body as { batch_id: string }).batch_id;
    const ended = await until(() => hook.received.find((r) => r.event === 'campaign_ended'), 'campaign_ended');
    const body = JSON.parse(ended.body) as { campaign: unknown };
    expect(body.campaign).toEqual((await t.request('GET', `/v1/batch-calls/${batchId}`)).body);
    expect(
      verifySignature(
        ended.body,
        ended.signature,
        ((await t.request('GET', '/v2/webhook-settings')).body as { signing_secret: string }).signing_secret,
        Date.now(),
      ),
    ).toBe(true);
  }, 60_000);

  it('refuses a webhook URL the egress policy refuses, naming the field', async () => {
    const res = await t.request('PUT', '/v2/webhook-settings', {
      body: { webhook_url: 'http://169.254.169.254/latest' },
    });
    expect(res.status).toBe(400);
    expect((res.body as { details: string }).details).toContain('body.webhook_url');
  });
});

describe('webhooks across a restart', () => {
  it('events written while the receiver was down are delivered by the next process', async () => {
    const hook = await receiver(1_000);
    const dataDir = mkdtempSync(join(tmpdir(), 'voicecall-webhooks-'));
    const first = await startTestService({ WEBHOOK_RETRY_BASE_MS: '60000' }, { dataDir });
    let callId: string;
    try {
      await phoneAgent(first);
      await first.request('PUT', '/v2/webhook-settings', { body: { webhook_url: hook.url } });
      callId = await shortCall(first);
      await until(() => hook.received.some((r) => r.call?.call_id === callId), 'a first (refused) attempt');
    } finally {
      await first.stop();
    }
    hook.setFailures(0);
    const second = await startTestService({ WEBHOOK_RETRY_BASE_MS: '100' }, { dataDir });
    try {
      // The first attempt's retry is a minute away; redelivering everything pending shows the outbox survived.
      const pending = (
        await second.request('POST', '/v2/webhook-deliveries/list', {
          body: { filter_criteria: { call_id: [callId!], status: ['pending'] } },
        })
      ).body as {
        deliveries: { delivery_id: string; event: string }[];
      };
      // call_started and call_ended at least (call_analyzed too once the analysis had finished).
      expect(pending.deliveries.map((d) => d.event)).toEqual(expect.arrayContaining(['call_started', 'call_ended']));
      for (const d of pending.deliveries)
        await second.request('POST', `/v2/webhook-deliveries/${d.delivery_id}/redeliver`);
      const accepted = await until(() => {
        const ok = hook.received.filter((r) => r.call?.call_id === callId && r.answered === 200);
        return ok.length >= pending.deliveries.length ? ok : undefined;
      }, 'the pending events after the restart');
      expect(accepted[0]!.event).toBe('call_started');
    } finally {
      await second.stop();
      hook.server.close();
    }
  }, 90_000);
});
