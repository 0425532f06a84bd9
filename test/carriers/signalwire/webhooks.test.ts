// SignalWire against the real service, through its stand-in (Twilio's with SignalWire's profile):
// only what the called number's (or the call's) SignalWire account signed with its Signing Key is
// taken; the cXML answer asks for a wideband stream (L16@16000h) that carries 16 kHz L16 both ways;
// outbound calls go to the space's LaML API with the project's basic auth and report back, signed,
// to SignalWire's own status route; a cold transfer to a busy destination brings the caller back on
// a wideband stream.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TwilioStreamCaller } from '../../../src/carriers/sim/twilio-stream.ts';
import { twilioSignature } from '../../../src/carriers/twilio/signature.ts';
import { DEMO_TRANSFER_FAILED } from '../../../src/demo/script.ts';
import { agentFinished, fixtureUlaw } from '../../helpers/phone.ts';
import { callEnded, startTestService, type TestService } from '../../helpers/service.ts';
import { SignalWireStandIn } from '../../helpers/signalwire-standin.ts';

const NUMBER = '+15550700001';
const ELSEWHERE = '+15550700002';
const DESK_BUSY = '+15550700020';
let t: TestService;
let signalwire: SignalWireStandIn;

beforeAll(async () => {
  signalwire = await new SignalWireStandIn().start();
  t = await startTestService({ SIGNALWIRE_API_BASE: signalwire.url });
  const account = await t.request('POST', '/v2/carrier-accounts', {
    body: { carrier: 'signalwire', name: 'main line', numbers: [NUMBER], credentials: signalwire.credentials() },
  });
  expect(account.status, account.text).toBe(201);
  for (const secret of Object.values(signalwire.credentials()).slice(1)) expect(account.text).not.toContain(secret);
  const demo = (await t.request('GET', '/v2/agents/demo')).body as Record<string, unknown> & { tools: unknown[] };
  const { agent_id: _id, version: _v, is_published: _p, last_modified: _m, ...config } = demo;
  const agent = await t.request('POST', '/v2/agents', {
    body: {
      ...config,
      agent_id: 'signalwire-desk',
      begin_message: 'Hello, you have reached the front desk.',
      inbound_numbers: [NUMBER, ELSEWHERE],
      tools: [...demo.tools, { type: 'transfer_call', transfer_to: DESK_BUSY }],
    },
  });
  expect(agent.status, agent.text).toBe(201);
  signalwire.behaviors.set(DESK_BUSY, { kind: 'busy' });
}, 60_000);
afterAll(async () => {
  await t?.stop();
  await signalwire?.close();
});

const callCount = async () =>
  ((await t.request('POST', '/v2/calls/list', { body: {} })).body as { total_count: number }).total_count;
const params = (to = NUMBER) => ({
  CallSid: randomUUID(),
  AccountSid: signalwire.accountSid,
  From: '+14155550100',
  To: to,
});
const voice = (body: Record<string, string>, headers: Record<string, string>) =>
  fetch(`${t.url}/telephony/signalwire/voice`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    body: new URLSearchParams(body).toString(),
  });
const signed = (body: Record<string, string>, key: string, header = 'x-signalwire-signature') => ({
  [header]: twilioSignature(key, `${t.url}/telephony/signalwire/voice`, body),
});

describe('SignalWire voice webhook', () => {
  it('is refused 403, with no call, unsigned, signed with the API token or another key, changed, or for a number on no SignalWire account', async () => {
    const before = await callCount();
    const body = params();
    expect((await voice(body, {})).status).toBe(403);
    expect((await voice(body, signed(body, signalwire.authToken))).status).toBe(403);
    expect((await voice(body, signed(body, 'another-signing-key'))).status).toBe(403);
    expect((await voice({ ...body, From: '+14155550199' }, signed(body, signalwire.signingKey))).status).toBe(403);
    const elsewhere = params(ELSEWHERE);
    const res = await voice(elsewhere, signed(elsewhere, signalwire.signingKey));
    expect(res.status).toBe(403);
    expect(await res.json()).toMatchObject({ code: 'FORBIDDEN' });
    expect(await callCount()).toBe(before);
  });

  it('signed with the Signing Key (X-SignalWire-Signature, or its X-Twilio-Signature alias), it answers cXML that streams L16@16000h with the call_id and secret', async () => {
    const before = await callCount();
    for (const header of ['x-signalwire-signature', 'x-twilio-signature']) {
      const body = params();
      const res = await voice(body, signed(body, signalwire.signingKey, header));
      expect(res.status).toBe(200);
      const cxml = await res.text();
      expect(cxml).toMatch(
        /^<\?xml version="1.0" encoding="UTF-8"\?><Response><Connect><Stream url="ws:\/\/[^"]+\/media\/signalwire" codec="L16@16000h"><Parameter name="call_id" value="[^"]+"\/><Parameter name="secret" value="[^"]+"\/><\/Stream><\/Connect><\/Response>$/,
      );
      const callId = /name="call_id" value="([^"]+)"/.exec(cxml)![1]!;
      const record = (await t.request('GET', `/v2/calls/${callId}`)).body;
      expect(record).toMatchObject({
        call_type: 'inbound',
        call_to: NUMBER,
        agent_id: 'signalwire-desk',
        metadata: { signalwire_call_sid: body.CallSid },
      });
    }
    expect(await callCount()).toBe(before + 2);
  });

  it("the stream carries 16 kHz L16 both ways: the agent's frames are 640 bytes and the caller's words are understood", async () => {
    const { caller, callId } = await signalwire.placeInboundCall(t.url, NUMBER, '+14155550100');
    // Generous waits: on a loaded machine the recogniser and voice are slow; nothing here depends on speed.
    await agentFinished(caller, { after: 0, timeoutMs: 60_000 });
    const media = caller.received.filter((m) => m.event === 'media');
    expect(media.length).toBeGreaterThan(10);
    for (const m of media.slice(0, 10))
      expect(Buffer.from((m.media as { payload: string }).payload, 'base64').length).toBe(640);
    await caller.speak(fixtureUlaw('05-no-thank-you'));
    await agentFinished(caller, { after: caller.played.length, timeoutMs: 60_000 });
    await caller.hangUp();
    const record = await callEnded(t, callId, 60_000);
    expect(record.transcript?.find((m) => m.role === 'user')?.content, JSON.stringify(record.transcript)).toMatch(
      /no,? thank you/i,
    );
  }, 180_000);
});

describe('a SignalWire carrier account', () => {
  it('is tried at its space before it is kept: a token the project refuses is a 400 naming api_token, and the number stays free', async () => {
    const res = await t.request('POST', '/v2/carrier-accounts', {
      body: {
        carrier: 'signalwire',
        name: 'wrong token',
        numbers: ['+15550700099'],
        credentials: { ...signalwire.credentials(), api_token: 'not-the-api-token' },
      },
    });
    expect(res.status, res.text).toBe(400);
    expect(res.text).toContain('body.credentials.api_token');
    const list = await t.request('POST', '/v2/carrier-accounts/list', { body: {} });
    expect(JSON.stringify(list.body)).not.toContain('wrong token');
  });
});

describe('SignalWire outbound', () => {
  it("a call from the account's number goes to the space's LaML API and a cold transfer to a busy destination brings the caller back on a wideband stream", async () => {
    const phone = '+15550700010';
    let heardBack = false;
    signalwire.behaviors.set(phone, {
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
      body: { call_from: NUMBER, call_to: phone, agent_id: 'signalwire-desk' },
    });
    expect(res.status, res.text).toBe(201);
    const callId = (res.body as { call_id: string }).call_id;
    const record = await callEnded(t, callId, 60_000);
    const placed = signalwire.calls.find((c) => c.form.To === phone)!;
    expect(placed.accountSid).toBe(signalwire.accountSid);
    expect(String(placed.form.Twiml)).toContain('codec="L16@16000h"');
    expect(String(placed.form.StatusCallback)).toContain(`/telephony/signalwire/status?call_id=${callId}`);
    expect(placed.callbacks.map((c) => c.httpStatus)).not.toContain(403);
    expect(placed.transfers.map(({ to, dialStatus }) => ({ to, dialStatus }))).toEqual([
      { to: DESK_BUSY, dialStatus: 'busy' },
    ]);
    expect(placed.transfers[0]!.twimlBack).toContain('codec="L16@16000h"');
    expect(heardBack).toBe(true);
    expect(record).toMatchObject({ call_status: 'ended', disconnection_reason: 'user_hangup' });
    const agent = record.transcript!.filter((m) => m.role === 'agent').map((m) => m.content);
    expect(agent.at(-1)).toBe(DEMO_TRANSFER_FAILED);
  }, 90_000);
});
