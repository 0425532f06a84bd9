// Vonage's webhooks against the real service: the answer URL's shared cases (test/carriers/webhook-cases.ts: only
// what the called number's Vonage account signed is taken, a uuid sent again gets the first answer) with Vonage's
// signed JWT and NCCO; here, a GET is signed and answered as a POST is, call events map to the outcomes Twilio's
// do, a cold transfer whose destination is busy brings the caller back to the agent through the NCCO the
// synchronous connect's event URL answers, and a warm transfer's second leg (leg=consult) that ends unanswered ends
// the hold while its other events change nothing.
import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { reportsOf } from '../../helpers/reporting-call.ts';
import { callEnded, type TestService } from '../../helpers/service.ts';
import { VonageStandIn, websocketOfNcco } from '../../helpers/vonage-standin.ts';
import { coldTransferToBusy, carrierDesk, webhookCases } from '../webhook-cases.ts';

const NUMBER = '+15550700001';
const ELSEWHERE = '+15550700002';
const DESK_BUSY = '+15550700020';
const AGENT = 'vonage-desk';
let t: TestService;
let vonage: VonageStandIn;

const desk = carrierDesk({
  carrier: 'vonage',
  start: () => new VonageStandIn().start(),
  env: (vonage) => ({ VONAGE_API_BASE: vonage.url }),
  credentials: (vonage) => ({
    application_id: vonage.applicationId,
    private_key: vonage.privateKey,
    signature_secret: vonage.signatureSecret,
  }),
  busy: (vonage, phone) => vonage.behaviors.set(phone, { kind: 'busy' }),
  number: NUMBER,
  elsewhere: ELSEWHERE,
  agentId: AGENT,
  busyDesk: DESK_BUSY,
});
beforeAll(() => {
  t = desk.t();
  vonage = desk.standIn();
});

// Vonage sends numbers without "+".
const answerBody = (to: string) => ({
  uuid: randomUUID(),
  conversation_uuid: `CON-${randomUUID()}`,
  from: '14155550100',
  to: to.slice(1),
});

webhookCases({
  name: 'Vonage',
  mediaPath: '/media/vonage',
  service: () => t,
  number: NUMBER,
  elsewhere: ELSEWHERE,
  agentId: AGENT,
  body: answerBody,
  changed: (body) => ({ ...body, from: '14155550199' }),
  send: (body, headers) =>
    fetch(`${t.url}/telephony/vonage/voice`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
    }),
  sign: async (body, key) => ({
    authorization: await vonage.signature(
      JSON.stringify(body),
      key === 'account' ? undefined : 'another-secret-entirely',
    ),
  }),
  streamOf: (ncco, res) => {
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    const endpoint = websocketOfNcco(JSON.parse(ncco));
    expect(endpoint?.uri).toMatch(/^ws:\/\//);
    expect(endpoint?.contentType).toBe('audio/l16;rate=16000');
    expect(Object.keys(endpoint?.headers ?? {}).sort()).toEqual(['call_id', 'secret']);
    return {
      path: new URL(endpoint!.uri).pathname,
      callId: endpoint!.headers.call_id!,
      secret: endpoint!.headers.secret!,
    };
  },
  recordOf: (body) => ({ metadata: { vonage_call_uuid: body.uuid } }),
});

describe('Vonage answer URL', () => {
  it('a signed GET registers the call and is answered as a POST is; sent again, the same answer; a GET signed with another secret is refused', async () => {
    const call = { to: NUMBER, from: '+14155550100', uuid: randomUUID() };
    expect((await vonage.answer(t.url, { ...call, uuid: randomUUID() }, 'x'.repeat(20))).status).toBe(403);
    const first = await vonage.answer(t.url, call);
    expect(first.status).toBe(200);
    const ncco = await first.text();
    const callId = websocketOfNcco(JSON.parse(ncco))?.headers.call_id;
    expect(callId).toMatch(/.+/);
    expect(await (await vonage.answer(t.url, call)).text()).toBe(ncco);
    expect((await t.request('GET', `/v2/calls/${callId}`)).body).toMatchObject({
      call_type: 'inbound',
      metadata: { vonage_call_uuid: call.uuid },
    });
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

  it("a warm transfer's second leg that ends unanswered ends the hold; its other events are not the call's", async () => {
    const res = await vonage.answer(t.url, { to: NUMBER, from: '+14155550100', uuid: randomUUID() });
    const callId = websocketOfNcco(await res.json())!.headers.call_id!;
    const url = `${t.url}/telephony/vonage/event?call_id=${callId}&leg=consult`;
    const reports = await reportsOf(t.service.registry, callId, async () => {
      for (const status of ['ringing', 'busy', 'unanswered', 'answered', 'completed'])
        expect((await vonage.postJson(url, { uuid: 'desk-uuid', status })).status).toBe(204);
    });
    expect(reports).toEqual(['second leg failed: the line was busy', 'second leg failed: nobody answered']);
    expect((await t.request('GET', `/v2/calls/${callId}`)).body).toMatchObject({ call_status: 'registered' });
  });

  it('a rejected call ends dial_failed, an unanswered one dial_no_answer', async () => {
    vonage.behaviors.set('+15550700031', { kind: 'rejected' });
    vonage.behaviors.set('+15550700032', { kind: 'timeout' });
    const dial = async (to: string) => {
      const res = await t.request('POST', '/v2/calls', {
        body: { call_from: NUMBER, call_to: to, agent_id: AGENT },
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
    await coldTransferToBusy(
      {
        ...desk.transfer,
        busy: 'busy',
        answer: (phone, talk, afterTransfer) => vonage.behaviors.set(phone, { kind: 'answer', talk, afterTransfer }),
        transfersOf: (phone) =>
          vonage.calls.find((c) => (c.body.to as { number: string }[])[0]!.number === phone.slice(1))!.transfers,
      },
      '+15550700010',
    );
  }, 90_000);
});
