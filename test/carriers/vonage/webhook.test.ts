// Vonage's webhooks against the real service: only what the called number's (or the call's) Vonage
// account signed is taken, GET or POST; a uuid sent again gets the first answer; call events map to
// the outcomes Twilio's do; a cold transfer whose destination is busy brings the caller back to the
// agent through the NCCO the synchronous connect's event URL answers.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TwilioStreamCaller } from '../../../src/carriers/sim/twilio-stream.ts';
import { DEMO_TRANSFER_FAILED } from '../../../src/demo/script.ts';
import { agentFinished, fixtureUlaw } from '../../helpers/phone.ts';
import { callEnded, startTestService, type TestService } from '../../helpers/service.ts';
import { VonageStandIn, websocketOfNcco } from '../../helpers/vonage-standin.ts';

const NUMBER = '+15550700001';
const ELSEWHERE = '+15550700002';
const DESK_BUSY = '+15550700020';
let t: TestService;
let vonage: VonageStandIn;

beforeAll(async () => {
  vonage = await new VonageStandIn().start();
  t = await startTestService({ VONAGE_API_BASE: vonage.url });
  const account = await t.request('POST', '/v2/carrier-accounts', {
    body: {
      carrier: 'vonage',
      name: 'main line',
      numbers: [NUMBER],
      credentials: {
        application_id: vonage.applicationId,
        private_key: vonage.privateKey,
        signature_secret: vonage.signatureSecret,
      },
    },
  });
  expect(account.status, account.text).toBe(201);
  const demo = (await t.request('GET', '/v2/agents/demo')).body as Record<string, unknown> & { tools: unknown[] };
  const { agent_id: _id, version: _v, is_published: _p, last_modified: _m, ...config } = demo;
  const agent = await t.request('POST', '/v2/agents', {
    body: { ...config, agent_id: 'vonage-desk', begin_message: 'Hi.', inbound_numbers: [NUMBER, ELSEWHERE] },
  });
  expect(agent.status, agent.text).toBe(201);
  const busy = await t.request('POST', '/v2/agents', {
    body: {
      ...config,
      agent_id: 'vonage-busy-desk',
      tools: [...demo.tools, { type: 'transfer_call', transfer_to: DESK_BUSY }],
    },
  });
  expect(busy.status, busy.text).toBe(201);
  vonage.behaviors.set(DESK_BUSY, { kind: 'busy' });
}, 60_000);
afterAll(async () => {
  await t?.stop();
  await vonage?.close();
});

const callCount = async () =>
  ((await t.request('POST', '/v2/calls/list', { body: {} })).body as { total_count: number }).total_count;
const answerBody = (to = NUMBER) => ({
  uuid: randomUUID(),
  conversation_uuid: `CON-${randomUUID()}`,
  from: '14155550100',
  to: to.slice(1),
});
const postAnswer = async (body: Record<string, unknown>, authorization?: string, raw = JSON.stringify(body)) =>
  fetch(`${t.url}/telephony/vonage/voice`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(authorization ? { authorization } : {}) },
    body: raw,
  });

describe('Vonage answer URL', () => {
  it('is refused 403, with no call: unsigned, signed with another secret, body changed, or a number on no Vonage account', async () => {
    const before = await callCount();
    const body = answerBody();
    const text = JSON.stringify(body);
    expect((await postAnswer(body)).status).toBe(403);
    expect((await postAnswer(body, await vonage.signature(text, 'another-secret-entirely'))).status).toBe(403);
    const changed = JSON.stringify({ ...body, from: '14155550199' });
    expect((await postAnswer(body, await vonage.signature(text), changed)).status).toBe(403);
    expect(
      (await vonage.answer(t.url, { to: NUMBER, from: '+14155550100', uuid: randomUUID() }, 'x'.repeat(20))).status,
    ).toBe(403);
    const elsewhere = await vonage.answer(t.url, { to: ELSEWHERE, from: '+14155550100', uuid: randomUUID() });
    expect(elsewhere.status).toBe(403);
    expect(await elsewhere.json()).toMatchObject({ code: 'FORBIDDEN' });
    expect(await callCount()).toBe(before);
  });

  it('a signed GET registers one inbound call and answers a websocket connect with its call_id and secret; sent again, the same answer', async () => {
    const before = await callCount();
    const call = { to: NUMBER, from: '+14155550100', uuid: randomUUID() };
    const first = await vonage.answer(t.url, call);
    expect(first.status).toBe(200);
    expect(first.headers.get('content-type')).toMatch(/^application\/json/);
    const ncco = await first.text();
    const endpoint = websocketOfNcco(JSON.parse(ncco));
    expect(endpoint?.uri).toMatch(/^ws:\/\/.+\/media\/vonage$/);
    expect(endpoint?.contentType).toBe('audio/l16;rate=16000');
    expect(Object.keys(endpoint?.headers ?? {}).sort()).toEqual(['call_id', 'secret']);
    expect(await (await vonage.answer(t.url, call)).text()).toBe(ncco);
    expect(await callCount()).toBe(before + 1);
    const record = (await t.request('GET', `/v2/calls/${endpoint!.headers.call_id}`)).body;
    expect(record).toMatchObject({
      call_type: 'inbound',
      call_to: NUMBER,
      call_from: '+14155550100',
      agent_id: 'vonage-desk',
      metadata: { vonage_call_uuid: call.uuid },
    });
  });

  it('a signed POST is answered the same way', async () => {
    const body = answerBody();
    const res = await postAnswer(body, await vonage.signature(JSON.stringify(body)));
    expect(res.status).toBe(200);
    expect(websocketOfNcco(await res.json())?.headers.call_id).toMatch(/.+/);
  });
});

describe('Vonage event URL', () => {
  it("takes a call's events only when the call's account signed them", async () => {
    const res = await vonage.answer(t.url, { to: NUMBER, from: '+14155550100', uuid: randomUUID() });
    const callId = websocketOfNcco(await res.json())!.headers.call_id!;
    const event = { uuid: randomUUID(), status: 'ringing', direction: 'inbound' };
    const url = `${t.url}/telephony/vonage/event?call_id=${callId}`;
    expect((await vonage.postJson(url, event)).status).toBe(204);
    expect((await vonage.postJson(url, event, 'another-secret-entirely')).status).toBe(403);
    const unsigned = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(event),
    });
    expect(unsigned.status).toBe(403);
  });

  it("an inbound call whose stream never came ends when Vonage reports it completed (found by its uuid); its websocket leg's events do not end it", async () => {
    const uuid = randomUUID();
    const res = await vonage.answer(t.url, { to: NUMBER, from: '+14155550100', uuid });
    const callId = websocketOfNcco(await res.json())!.headers.call_id!;
    // The websocket leg's own events name the call but not its uuid: they are not the call's.
    const leg = await vonage.postJson(`${t.url}/telephony/vonage/event?call_id=${callId}`, {
      uuid: randomUUID(),
      status: 'completed',
    });
    expect(leg.status).toBe(204);
    expect((await t.request('GET', `/v2/calls/${callId}`)).body).toMatchObject({ call_status: 'registered' });
    const done = await vonage.postJson(`${t.url}/telephony/vonage/event`, { uuid, status: 'completed' });
    expect(done.status).toBe(204);
    expect(await callEnded(t, callId)).toMatchObject({ call_status: 'error', disconnection_reason: 'error_service' });
  });

  it('a rejected call ends dial_failed, an unanswered one dial_no_answer', async () => {
    vonage.behaviors.set('+15550700031', { kind: 'rejected' });
    vonage.behaviors.set('+15550700032', { kind: 'timeout' });
    const dial = async (to: string) => {
      const res = await t.request('POST', '/v2/calls', {
        body: { call_from: NUMBER, call_to: to, agent_id: 'vonage-desk' },
      });
      expect(res.status, res.text).toBe(201);
      return callEnded(t, (res.body as { call_id: string }).call_id);
    };
    const [rejected, unanswered] = await Promise.all([dial('+15550700031'), dial('+15550700032')]);
    expect(rejected).toMatchObject({ call_status: 'not_connected', disconnection_reason: 'dial_failed' });
    expect(unanswered).toMatchObject({ call_status: 'not_connected', disconnection_reason: 'dial_no_answer' });
    const placed = vonage.calls.find((c) => (c.body.to as { number: string }[])[0]!.number === '15550700031')!;
    expect(placed.body).toMatchObject({ from: { type: 'phone', number: NUMBER.slice(1) }, event_method: 'POST' });
    expect(placed.events.map((e) => e.httpStatus)).toEqual([204, 204, 204]);
  });

  it('a cold transfer to a busy destination brings the caller back to the agent, who says it could not put them through', async () => {
    const phone = '+15550700010';
    let heardBack = false;
    vonage.behaviors.set(phone, {
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
      body: { call_from: NUMBER, call_to: phone, agent_id: 'vonage-busy-desk' },
    });
    expect(res.status, res.text).toBe(201);
    const record = await callEnded(t, (res.body as { call_id: string }).call_id, 60_000);
    const placed = vonage.calls.find((c) => (c.body.to as { number: string }[])[0]!.number === phone.slice(1))!;
    expect(placed.transfers).toEqual([{ to: DESK_BUSY, outcome: 'busy' }]);
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
