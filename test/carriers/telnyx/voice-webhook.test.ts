// Telnyx's webhooks against the real service: only what the called number's (or the call's) Telnyx
// account signed is taken, a CallSid sent again gets the first answer, and the transfer route reads
// Call Control's JSON events under the same signature.
import { generateKeyPairSync, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { streamOfTexml, TelnyxStandIn } from '../../helpers/telnyx-standin.ts';
import { startTestService, type TestService } from '../../helpers/service.ts';

const NUMBER = '+15550600001';
const ELSEWHERE = '+15550600002';
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
});
