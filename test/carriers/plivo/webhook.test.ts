// Plivo's requests against the real service: the inbound webhook's shared cases (test/carriers/webhook-cases.ts:
// only what the called number's Plivo account signed is taken, a CallUUID sent again gets the first answer) with
// Plivo's V3 signature and XML; here, a nonce changed is refused, a GET is signed and answered as a POST is, the
// callbacks take the same signature, a stream without its secret is closed 1008, a cold transfer whose
// destination is busy brings the caller back to the agent on the stream the <Dial>'s action answers, and a warm
// transfer's second leg (leg=consult) is streamed with its own secret without becoming the call, ends the hold when it
// hangs up unanswered, and its conference XML names the call's room.
import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { SqliteCarrierCallRepository } from '../../../src/store/carrier-calls.ts';
import { PlivoStandIn, streamOfXml } from '../../helpers/plivo-standin.ts';
import { reportsOf } from '../../helpers/reporting-call.ts';
import type { TestService } from '../../helpers/service.ts';
import { coldTransferToBusy, carrierDesk, webhookCases, type WebhookBody } from '../webhook-cases.ts';

const NUMBER = '+15550700001';
const ELSEWHERE = '+15550700002';
const DESK_BUSY = '+15550700020';
const AGENT = 'plivo-desk';
let t: TestService;
let plivo: PlivoStandIn;

const desk = carrierDesk({
  carrier: 'plivo',
  start: () => new PlivoStandIn().start(),
  env: (plivo) => ({ PLIVO_API_BASE: plivo.url }),
  credentials: (plivo) => ({ auth_id: plivo.authId, auth_token: plivo.authToken }),
  busy: (plivo, phone) => plivo.behaviors.set(phone, { kind: 'busy' }),
  number: NUMBER,
  elsewhere: ELSEWHERE,
  agentId: AGENT,
  busyDesk: DESK_BUSY,
});
beforeAll(() => {
  t = desk.t();
  plivo = desk.standIn();
});

const voiceUrl = () => `${t.url}/telephony/plivo/voice`;
const post = (url: string, params: WebhookBody, headers: Record<string, string>) =>
  fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    body: new URLSearchParams(params).toString(),
  });
// Plivo sends numbers without "+".
const params = (to: string) => ({
  CallUUID: randomUUID(),
  CallStatus: 'ringing',
  Direction: 'inbound',
  Event: 'StartApp',
  From: '14155550100',
  To: to.slice(1),
});

webhookCases({
  name: 'Plivo',
  mediaPath: '/media/plivo',
  service: () => t,
  number: NUMBER,
  elsewhere: ELSEWHERE,
  agentId: AGENT,
  body: params,
  changed: (body) => ({ ...body, From: '14155550199' }),
  send: (body, headers) => post(voiceUrl(), body, headers),
  sign: async (body, key) =>
    plivo.signatureHeaders('POST', voiceUrl(), body, key === 'account' ? undefined : 'another-token'),
  streamOf: (xml, res) => {
    expect(res.headers.get('content-type')).toMatch(/xml/);
    const stream = streamOfXml(xml);
    expect(stream?.attributes).toMatchObject({
      bidirectional: 'true',
      keepCallAlive: 'true',
      contentType: 'audio/x-l16;rate=16000',
    });
    const url = new URL(stream!.url);
    expect([...url.searchParams.keys()].sort()).toEqual(['call_id', 'secret']);
    return { path: url.pathname, callId: url.searchParams.get('call_id')!, secret: url.searchParams.get('secret')! };
  },
  recordOf: (body) => ({ metadata: { plivo_call_uuid: body.CallUUID } }),
});

describe('Plivo answer URL', () => {
  it('is refused 403 with its nonce changed after it was signed', async () => {
    const body = params(NUMBER);
    const signed = plivo.signatureHeaders('POST', voiceUrl(), body);
    expect((await post(voiceUrl(), body, { ...signed, 'x-plivo-signature-v3-nonce': 'other' })).status).toBe(403);
  });

  it('a signed GET, its parameters in the query, is answered as a POST is', async () => {
    const url = `${voiceUrl()}?${new URLSearchParams(params(NUMBER)).toString()}`;
    const unsigned = await fetch(url);
    expect(unsigned.status).toBe(403);
    const res = await fetch(url, { headers: plivo.signatureHeaders('GET', url, {}) });
    expect(res.status).toBe(200);
    expect(streamOfXml(await res.text())?.url).toMatch(/\/media\/plivo\?call_id=/);
  });

  it('a stream without its secret, or with another call’s, is closed 1008 and leaves the call waiting', async () => {
    const answered = streamOfXml(await (await plivo.postForm(voiceUrl(), params(NUMBER))).text())!;
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
    const answered = streamOfXml(await (await plivo.postForm(voiceUrl(), params(NUMBER))).text())!;
    const callId = new URL(answered.url).searchParams.get('call_id')!;
    const url = `${t.url}/telephony/plivo/status?call_id=${callId}`;
    const body = { CallUUID: randomUUID(), CallStatus: 'ringing' };
    expect((await post(url, body, {})).status).toBe(403);
    expect((await post(url, body, plivo.signatureHeaders('POST', url, body, 'another-token'))).status).toBe(403);
    expect((await plivo.postForm(url, body)).status).toBe(204);
  });

  it("a warm transfer's second leg streams with its own secret and leaves the call's CallUUID as it was; hung up unanswered it ends the hold, answered and over it changes nothing", async () => {
    const callUuid = randomUUID();
    const answered = streamOfXml(
      await (await plivo.postForm(voiceUrl(), { ...params(NUMBER), CallUUID: callUuid })).text(),
    )!;
    const callId = new URL(answered.url).searchParams.get('call_id')!;
    const leg = (status: string) => ({ CallUUID: 'desk-uuid', ALegRequestUUID: 'req-desk', CallStatus: status });
    const answer = await plivo.postForm(
      `${t.url}/telephony/plivo/answer?call_id=${callId}&secret=leg-secret&leg=consult`,
      {
        ...leg('in-progress'),
        From: '15550700001',
        To: '14155550177',
        Direction: 'outbound',
      },
    );
    expect(answer.status).toBe(200);
    const stream = new URL(streamOfXml(await answer.text())!.url);
    expect(Object.fromEntries(stream.searchParams)).toEqual({ call_id: callId, secret: 'leg-secret' });
    expect(new SqliteCarrierCallRepository(t.service.db!).carrierCallId(callId)).toBe(callUuid);
    const status = `${t.url}/telephony/plivo/status?call_id=${callId}&leg=consult`;
    const reports = await reportsOf(t.service.registry, callId, async () => {
      for (const s of ['busy', 'timeout', 'completed']) expect((await plivo.postForm(status, leg(s))).status).toBe(204);
    });
    expect(reports).toEqual(['second leg failed: the line was busy', 'second leg failed: nobody answered']);
    const conference = await plivo.postForm(
      `${t.url}/telephony/plivo/conference?call_id=${callId}`,
      leg('in-progress'),
    );
    expect(await conference.text()).toMatch(
      new RegExp(
        `<Conference startConferenceOnEnter="true" endConferenceOnExit="true">transfer-${callId}</Conference>`,
      ),
    );
  });

  it('a cold transfer to a busy destination brings the caller back to the agent, who says it could not put them through', async () => {
    await coldTransferToBusy(
      {
        ...desk.transfer,
        busy: 'busy',
        answer: (phone, talk, afterTransfer) => plivo.behaviors.set(phone, { kind: 'answer', talk, afterTransfer }),
        transfersOf: (phone) => plivo.calls.find((c) => c.body.to === phone.slice(1))!.transfers,
      },
      '+15550700010',
    );
    expect(plivo.lines.flatMap((l) => l.protocolErrors)).toEqual([]);
  }, 90_000);
});
