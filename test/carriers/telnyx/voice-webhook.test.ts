// Telnyx's webhooks against the real service: only what the called number's (or the call's) Telnyx
// account signed is taken, a CallSid sent again gets the first answer, and the transfer route reads
// Call Control's JSON events under the same signature; a cold transfer whose destination is busy
// brings the caller back to the agent on a stream Telnyx opens with streaming_start.
import { generateKeyPairSync, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TwilioStreamCaller } from '../../../src/carriers/sim/twilio-stream.ts';
import { DEMO_TRANSFER_FAILED } from '../../../src/demo/script.ts';
import { agentFinished, fixtureUlaw } from '../../helpers/phone.ts';
import { streamOfTexml, TelnyxStandIn } from '../../helpers/telnyx-standin.ts';
import { callEnded, startTestService, type TestService } from '../../helpers/service.ts';

const NUMBER = '+15550600001';
const ELSEWHERE = '+15550600002';
const DESK_BUSY = '+15550600020';
let t: TestService;
let telnyx: TelnyxStandIn;

beforeAll(async () => {
  telnyx = await new TelnyxStandIn().start();
  t = await startTestService({ TELNYX_API_BASE: telnyx.url });
  const account = await t.request('POST', '/v2/carrier-accounts', {
    body: {
      carrier: 'telnyx',
      name: 'main line',
      numbers: [NUMBER],
      credentials: { api_key: telnyx.apiKey, public_key: telnyx.publicKey, connection_id: telnyx.connectionId },
    },
  });
  expect(account.status, account.text).toBe(201);
  const agent = await t.request('POST', '/v2/agents', {
    body: {
      agent_id: 'telnyx-desk',
      agent_name: 'Telnyx desk',
      begin_message: 'Hi.',
      inbound_numbers: [NUMBER, ELSEWHERE],
      llm: { base_url: `${t.url}/demo/llm/v1`, model: 'demo' },
    },
  });
  expect(agent.status, agent.text).toBe(201);
  const demo = (await t.request('GET', '/v2/agents/demo')).body as Record<string, unknown> & { tools: unknown[] };
  const { agent_id: _id, version: _v, is_published: _p, last_modified: _m, ...config } = demo;
  const busy = await t.request('POST', '/v2/agents', {
    body: {
      ...config,
      agent_id: 'telnyx-busy-desk',
      tools: [...demo.tools, { type: 'transfer_call', transfer_to: DESK_BUSY }],
    },
  });
  expect(busy.status, busy.text).toBe(201);
  telnyx.behaviors.set(DESK_BUSY, { kind: 'busy' });
}, 60_000);
afterAll(async () => {
  await t?.stop();
  await telnyx?.close();
});

const callCount = async () =>
  ((await t.request('POST', '/v2/calls/list', { body: {} })).body as { total_count: number }).total_count;
const voice = (params: Record<string, string>, headers: Record<string, string>) =>
  fetch(`${t.url}/telephony/telnyx/voice`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    body: new URLSearchParams(params).toString(),
  });
const params = (to = NUMBER) => ({
  CallSid: `v3:${randomUUID()}`,
  AccountSid: randomUUID(),
  From: '+14155550100',
  To: to,
});

describe('Telnyx voice webhook', () => {
  it('is refused 403, with no call, unsigned, signed by another key, signed too long ago, changed, or for a number on no Telnyx account', async () => {
    const before = await callCount();
    const body = params();
    const text = new URLSearchParams(body).toString();
    const signed = telnyx.signatureHeaders(text);
    expect((await voice(body, {})).status).toBe(403);
    expect((await voice(body, telnyx.signatureHeaders(text, generateKeyPairSync('ed25519').privateKey))).status).toBe(
      403,
    );
    expect((await voice({ ...body, From: '+14155550199' }, signed)).status).toBe(403);
    const stale = String(Math.floor(Date.now() / 1000) - 600);
    const staleSigned = telnyx.signatureHeaders(text);
    expect((await voice(body, { ...staleSigned, 'telnyx-timestamp': stale })).status).toBe(403);
    const res = await telnyx.postForm(`${t.url}/telephony/telnyx/voice`, params(ELSEWHERE));
    expect(res.status).toBe(403);
    expect(await res.json()).toMatchObject({ code: 'FORBIDDEN' });
    expect(await callCount()).toBe(before);
  });

  it('a signed webhook registers one inbound call and answers a stream with its call_id and secret; sent again, the same answer', async () => {
    const before = await callCount();
    const body = params();
    const first = await telnyx.postForm(`${t.url}/telephony/telnyx/voice`, body);
    expect(first.status).toBe(200);
    const texml = await first.text();
    const stream = streamOfTexml(texml);
    expect(stream?.url).toMatch(/^ws:\/\/.+\/media\/telnyx$/);
    expect(texml).toContain('bidirectionalMode="rtp"');
    expect(Object.keys(stream?.parameters ?? {}).sort()).toEqual(['call_id', 'secret']);
    const again = await telnyx.postForm(`${t.url}/telephony/telnyx/voice`, body);
    expect(await again.text()).toBe(texml);
    expect(await callCount()).toBe(before + 1);
    const record = (await t.request('GET', `/v2/calls/${stream!.parameters.call_id}`)).body;
    expect(record).toMatchObject({ call_type: 'inbound', call_to: NUMBER, agent_id: 'telnyx-desk' });
  });

  it("the transfer route reads Call Control's JSON only when the call's account signed it", async () => {
    const answered = await telnyx.postForm(`${t.url}/telephony/telnyx/voice`, params());
    const callId = streamOfTexml(await answered.text())!.parameters.call_id!;
    const event = JSON.stringify({ data: { event_type: 'call.hangup', payload: { hangup_cause: 'user_busy' } } });
    const post = (headers: Record<string, string>) =>
      fetch(`${t.url}/telephony/telnyx/transfer?call_id=${callId}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body: event,
      });
    expect((await post(telnyx.signatureHeaders(event))).status).toBe(204);
    expect((await post(telnyx.signatureHeaders(event, generateKeyPairSync('ed25519').privateKey))).status).toBe(403);
    expect((await post({})).status).toBe(403);
  });

  it('a cold transfer to a busy destination brings the caller back to the agent, who says it could not put them through', async () => {
    const phone = '+15550600010';
    let heardBack = false;
    telnyx.behaviors.set(phone, {
      kind: 'answer',
      talk: async (line: TwilioStreamCaller) => {
        await agentFinished(line, { after: 0, timeoutMs: 30_000 });
        await line.speak(fixtureUlaw('11-can-i-speak-to'));
        await line.waitForClose();
      },
      afterTransfer: async (line: TwilioStreamCaller) => {
        await agentFinished(line, { after: 0, timeoutMs: 30_000 });
        heardBack = true;
        await line.hangUp();
      },
    });
    const res = await t.request('POST', '/v2/calls', {
      body: { call_from: NUMBER, call_to: phone, agent_id: 'telnyx-busy-desk' },
    });
    expect(res.status, res.text).toBe(201);
    const record = await callEnded(t, (res.body as { call_id: string }).call_id, 60_000);
    const placed = telnyx.calls.find((c) => c.body.To === phone)!;
    expect(placed.transfers).toEqual([{ to: DESK_BUSY, outcome: 'user_busy' }]);
    expect(heardBack).toBe(true);
    expect(record).toMatchObject({
      call_status: 'ended',
      disconnection_reason: 'user_hangup',
      transfer_destination: null,
    });
    const agent = record.transcript!.filter((m) => m.role === 'agent').map((m) => m.content);
    expect(agent.slice(-2)).toEqual(['Let me transfer you.', DEMO_TRANSFER_FAILED]);
  }, 90_000);
});
