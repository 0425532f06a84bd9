// Plivo's requests against the real service: only what the called number's (or the call's) Plivo
// account signed is taken, by POST or GET, and a CallUUID sent again gets the first answer; the
// callbacks take the same signature; a stream without its secret is closed 1008; a cold transfer
// whose destination is busy brings the caller back to the agent on the stream the <Dial>'s action answers.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { TwilioStreamCaller } from '../../../src/carriers/sim/twilio-stream.ts';
import { DEMO_TRANSFER_FAILED } from '../../../src/demo/script.ts';
import { agentFinished, fixtureUlaw } from '../../helpers/phone.ts';
import { PlivoStandIn, streamOfXml } from '../../helpers/plivo-standin.ts';
import { callEnded, startTestService, type TestService } from '../../helpers/service.ts';

const NUMBER = '+15550700001';
const ELSEWHERE = '+15550700002';
const DESK_BUSY = '+15550700020';
let t: TestService;
let plivo: PlivoStandIn;

beforeAll(async () => {
  plivo = await new PlivoStandIn().start();
  t = await startTestService({ PLIVO_API_BASE: plivo.url });
  const account = await t.request('POST', '/v2/carrier-accounts', {
    body: {
      carrier: 'plivo',
      name: 'main line',
      numbers: [NUMBER],
      credentials: { auth_id: plivo.authId, auth_token: plivo.authToken },
    },
  });
  expect(account.status, account.text).toBe(201);
  const agent = await t.request('POST', '/v2/agents', {
    body: {
      agent_id: 'plivo-desk',
      agent_name: 'Plivo desk',
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
      agent_id: 'plivo-busy-desk',
      tools: [...demo.tools, { type: 'transfer_call', transfer_to: DESK_BUSY }],
    },
  });
  expect(busy.status, busy.text).toBe(201);
  plivo.behaviors.set(DESK_BUSY, { kind: 'busy' });
}, 60_000);
afterAll(async () => {
  await t?.stop();
  await plivo?.close();
});

const callCount = async () =>
  ((await t.request('POST', '/v2/calls/list', { body: {} })).body as { total_count: number }).total_count;
const voiceUrl = () => `${t.url}/telephony/plivo/voice`;
const post = (url: string, params: Record<string, string>, headers: Record<string, string>) =>
  fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    body: new URLSearchParams(params).toString(),
  });
// Plivo sends numbers without "+".
const params = (to = NUMBER) => ({
  CallUUID: randomUUID(),
  CallStatus: 'ringing',
  Direction: 'inbound',
  Event: 'StartApp',
  From: '14155550100',
  To: to.slice(1),
});

describe('Plivo answer URL', () => {
  it('is refused 403, with no call, unsigned, signed with another token or nonce, changed, or for a number on no Plivo account', async () => {
    const before = await callCount();
    const body = params();
    const signed = plivo.signatureHeaders('POST', voiceUrl(), body);
    expect((await post(voiceUrl(), body, {})).status).toBe(403);
    expect(
      (await post(voiceUrl(), body, plivo.signatureHeaders('POST', voiceUrl(), body, 'another-token'))).status,
    ).toBe(403);
    expect((await post(voiceUrl(), body, { ...signed, 'x-plivo-signature-v3-nonce': 'other' })).status).toBe(403);
    expect((await post(voiceUrl(), { ...body, From: '14155550199' }, signed)).status).toBe(403);
    const res = await plivo.postForm(voiceUrl(), params(ELSEWHERE));
    expect(res.status).toBe(403);
    expect(await res.json()).toMatchObject({ code: 'FORBIDDEN' });
    expect(await callCount()).toBe(before);
  });

  it('a signed POST registers one inbound call and answers a wideband stream naming it; sent again, the same answer', async () => {
    const before = await callCount();
    const body = params();
    const first = await plivo.postForm(voiceUrl(), body);
    expect(first.status).toBe(200);
    expect(first.headers.get('content-type')).toMatch(/xml/);
    const xml = await first.text();
    const stream = streamOfXml(xml);
    expect(stream?.attributes).toMatchObject({
      bidirectional: 'true',
      keepCallAlive: 'true',
      contentType: 'audio/x-l16;rate=16000',
    });
    const url = new URL(stream!.url);
    expect(url.pathname).toBe('/media/plivo');
    expect([...url.searchParams.keys()].sort()).toEqual(['call_id', 'secret']);
    const again = await plivo.postForm(voiceUrl(), body);
    expect(await again.text()).toBe(xml);
    expect(await callCount()).toBe(before + 1);
    const record = (await t.request('GET', `/v2/calls/${url.searchParams.get('call_id')}`)).body;
    expect(record).toMatchObject({
      call_type: 'inbound',
      call_from: '+14155550100',
      call_to: NUMBER,
      agent_id: 'plivo-desk',
      metadata: { plivo_call_uuid: body.CallUUID },
    });
  });

  it('a signed GET, its parameters in the query, is answered as a POST is', async () => {
    const url = `${voiceUrl()}?${new URLSearchParams(params()).toString()}`;
    const unsigned = await fetch(url);
    expect(unsigned.status).toBe(403);
    const res = await fetch(url, { headers: plivo.signatureHeaders('GET', url, {}) });
    expect(res.status).toBe(200);
    expect(streamOfXml(await res.text())?.url).toMatch(/\/media\/plivo\?call_id=/);
  });

  it('a stream without its secret, or with another call’s, is closed 1008 and leaves the call waiting', async () => {
    const answered = streamOfXml(await (await plivo.postForm(voiceUrl(), params())).text())!;
    const callId = new URL(answered.url).searchParams.get('call_id')!;
    const startText = JSON.stringify({
      event: 'start',
      sequenceNumber: 1,
      start: {
        callId: randomUUID(),
        streamId: randomUUID(),
        mediaFormat: { encoding: 'audio/x-l16', sampleRate: 16000 },
      },
    });
    const closeCode = (url: string) =>
      new Promise<number>((resolve) => {
        const socket = new WebSocket(url);
        socket.on('open', () => socket.send(startText));
        socket.on('close', (code) => resolve(code));
      });
    const base = `${t.url.replace('http', 'ws')}/media/plivo`;
    expect(await closeCode(`${base}?call_id=${callId}`)).toBe(1008);
    expect(await closeCode(`${base}?call_id=${callId}&secret=wrong`)).toBe(1008);
    expect((await t.request('GET', `/v2/calls/${callId}`)).body).toMatchObject({ call_status: 'registered' });
  });

  it('callbacks are taken only signed by the account of the call they name', async () => {
    const answered = streamOfXml(await (await plivo.postForm(voiceUrl(), params())).text())!;
    const callId = new URL(answered.url).searchParams.get('call_id')!;
    const url = `${t.url}/telephony/plivo/status?call_id=${callId}`;
    const body = { CallUUID: randomUUID(), CallStatus: 'ringing' };
    expect((await post(url, body, {})).status).toBe(403);
    expect((await post(url, body, plivo.signatureHeaders('POST', url, body, 'another-token'))).status).toBe(403);
    expect((await plivo.postForm(url, body)).status).toBe(204);
  });

  it('a cold transfer to a busy destination brings the caller back to the agent, who says it could not put them through', async () => {
    const phone = '+15550700010';
    let heardBack = false;
    plivo.behaviors.set(phone, {
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
      body: { call_from: NUMBER, call_to: phone, agent_id: 'plivo-busy-desk' },
    });
    expect(res.status, res.text).toBe(201);
    const record = await callEnded(t, (res.body as { call_id: string }).call_id, 60_000);
    const placed = plivo.calls.find((c) => c.body.to === phone.slice(1))!;
    expect(placed.transfers).toEqual([{ to: DESK_BUSY, outcome: 'busy' }]);
    expect(heardBack).toBe(true);
    expect(record).toMatchObject({
      call_status: 'ended',
      disconnection_reason: 'user_hangup',
      transfer_destination: null,
    });
    const agent = record.transcript!.filter((m) => m.role === 'agent').map((m) => m.content);
    expect(agent.slice(-2)).toEqual(['Let me transfer you.', DEMO_TRANSFER_FAILED]);
    expect(plivo.lines.flatMap((l) => l.protocolErrors)).toEqual([]);
  }, 90_000);
});
