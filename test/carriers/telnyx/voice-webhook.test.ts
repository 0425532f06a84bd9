// Telnyx's webhooks against the real service: the inbound webhook's shared cases (test/carriers/webhook-cases.ts:
// only what the called number's Telnyx account signed is taken, a CallSid sent again gets the first answer) with
// Telnyx's Ed25519 signature and TeXML; here, a signature too old is refused, the transfer route reads Call
// Control's JSON events under the same signature, a cold transfer whose destination is busy brings the caller
// back to the agent on a stream Telnyx opens with streaming_start, a warm transfer whose second leg is busy (its
// status marked leg=consult) ends the caller's hold and the caller stays with the agent, and a caller on a G.722 leg
// is asked for G.722 both ways and runs at 16 kHz.
import { generateKeyPairSync, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { muLawDecode } from '../../../src/audio/g711.ts';
import { DEMO_TRANSFER_FAILED } from '../../../src/demo/script.ts';
import { agentFinished, fixtureUlaw } from '../../helpers/phone.ts';
import { streamOfTexml, TelnyxStandIn } from '../../helpers/telnyx-standin.ts';
import { callEnded, type TestService } from '../../helpers/service.ts';
import { coldTransferToBusy, carrierDesk, webhookCases, type WebhookBody } from '../webhook-cases.ts';

const NUMBER = '+15550600001';
const ELSEWHERE = '+15550600002';
const DESK_BUSY = '+15550600020';
const AGENT = 'telnyx-desk';
let t: TestService;
let telnyx: TelnyxStandIn;

const desk = carrierDesk({
  carrier: 'telnyx',
  start: () => new TelnyxStandIn().start(),
  env: (telnyx) => ({ TELNYX_API_BASE: telnyx.url }),
  credentials: (telnyx) => ({
    api_key: telnyx.apiKey,
    public_key: telnyx.publicKey,
    connection_id: telnyx.connectionId,
  }),
  busy: (telnyx, phone) => telnyx.behaviors.set(phone, { kind: 'busy' }),
  number: NUMBER,
  elsewhere: ELSEWHERE,
  agentId: AGENT,
  busyDesk: DESK_BUSY,
});
beforeAll(() => {
  t = desk.t();
  telnyx = desk.standIn();
});

const formText = (body: WebhookBody) => new URLSearchParams(body).toString();
const voice = (body: WebhookBody, headers: Record<string, string>) =>
  fetch(`${t.url}/telephony/telnyx/voice`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    body: formText(body),
  });
const params = (to: string) => ({
  CallSid: `v3:${randomUUID()}`,
  AccountSid: randomUUID(),
  From: '+14155550100',
  To: to,
});

webhookCases({
  name: 'Telnyx',
  mediaPath: '/media/telnyx',
  service: () => t,
  number: NUMBER,
  elsewhere: ELSEWHERE,
  agentId: AGENT,
  body: params,
  changed: (body) => ({ ...body, From: '+14155550199' }),
  send: voice,
  sign: async (body, key) =>
    telnyx.signatureHeaders(formText(body), key === 'account' ? undefined : generateKeyPairSync('ed25519').privateKey),
  streamOf: (texml) => {
    expect(texml).toContain('bidirectionalMode="rtp"');
    const stream = streamOfTexml(texml);
    expect(stream?.url).toMatch(/^ws:\/\//);
    expect(Object.keys(stream?.parameters ?? {}).sort()).toEqual(['call_id', 'secret']);
    return {
      path: new URL(stream!.url).pathname,
      callId: stream!.parameters.call_id!,
      secret: stream!.parameters.secret!,
    };
  },
});

describe('Telnyx webhooks', () => {
  it('a voice webhook signed too long ago is refused 403', async () => {
    const body = params(NUMBER);
    const stale = String(Math.floor(Date.now() / 1000) - 600);
    expect((await voice(body, { ...telnyx.signatureHeaders(formText(body)), 'telnyx-timestamp': stale })).status).toBe(
      403,
    );
  });

  it("the transfer route reads Call Control's JSON only when the call's account signed it", async () => {
    const answered = await telnyx.postForm(`${t.url}/telephony/telnyx/voice`, params(NUMBER));
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
    await coldTransferToBusy(
      {
        ...desk.transfer,
        busy: 'user_busy',
        answer: (phone, talk, afterTransfer) => telnyx.behaviors.set(phone, { kind: 'answer', talk, afterTransfer }),
        transfersOf: (phone) => telnyx.calls.find((c) => c.body.To === phone)!.transfers,
      },
      '+15550600010',
    );
  }, 90_000);

  it('a warm transfer whose second leg is busy ends the hold: the caller stays with the agent, who says it could not put them through', async () => {
    const demo = (await t.request('GET', '/v2/agents/demo')).body as Record<string, unknown> & { tools: unknown[] };
    const { agent_id: _id, version: _v, is_published: _p, last_modified: _m, ...config } = demo;
    const agent = await t.request('POST', '/v2/agents', {
      body: {
        ...config,
        agent_id: 'telnyx-warm',
        begin_message: 'Front desk, how can I help?',
        tools: [...demo.tools, { type: 'transfer_call', transfer_to: DESK_BUSY, mode: 'warm' }],
      },
    });
    expect(agent.status, agent.text).toBe(201);
    const phone = '+15550600011';
    telnyx.behaviors.set(phone, {
      kind: 'answer',
      talk: async (line) => {
        await agentFinished(line, { after: 0, timeoutMs: 30_000 });
        await line.speak(fixtureUlaw('11-can-i-speak-to'));
        await line.waitForClose();
      },
    });
    const res = await t.request('POST', '/v2/calls', {
      body: { call_from: NUMBER, call_to: phone, agent_id: 'telnyx-warm' },
    });
    expect(res.status, res.text).toBe(201);
    const callId = (res.body as { call_id: string }).call_id;
    await vi.waitFor(
      async () => {
        const r = (await t.request('GET', `/v2/calls/${callId}`)).body as { transcript: { content: string }[] };
        expect(r.transcript.map((m) => m.content)).toContain(DEMO_TRANSFER_FAILED);
      },
      { timeout: 45_000, interval: 200 },
    );
    const [placed, leg] = telnyx.calls.filter((c) => c.callId === callId);
    // The second leg rang the desk, which was busy; its status reached the service marked as the transfer's leg.
    expect(leg!.body).toMatchObject({ To: DESK_BUSY, From: NUMBER });
    expect(String(leg!.body.StatusCallback)).toContain('leg=consult');
    expect(leg!.callbacks.at(-1)).toEqual({ status: 'busy', httpStatus: 204 });
    expect(placed!.bridgedWith).toBeUndefined();
    await placed!.stream!.hangUp();
    expect(await callEnded(t, callId)).toMatchObject({
      call_status: 'ended',
      disconnection_reason: 'user_hangup',
      transfer_destination: null,
    });
  }, 90_000);

  it("a caller on a G.722 leg (a SIP address) is asked for G.722 both ways: the call's line runs at 16 kHz and the agent is heard", async () => {
    const sipCaller = 'sip:alice@pbx.example.com';
    telnyx.g722Legs.add(sipCaller);
    const { caller, callId, texml } = await telnyx.placeInboundCall(t.url, NUMBER, sipCaller);
    expect(texml).toContain(
      'codec="G722" bidirectionalMode="rtp" bidirectionalCodec="G722" bidirectionalSamplingRate="16000"',
    );
    const played: Buffer[] = [];
    caller.on('played', (frame) => played.push(frame.payload));
    await caller.waitFor((message) => message.event === 'media', 20_000);
    while (played.length < 25) await new Promise((resolve) => setTimeout(resolve, 20));
    await caller.hangUp();
    // The greeting reached the caller through G.722: decoded on its phone, half a second of it is not silence.
    const heard = muLawDecode(Buffer.concat(played));
    expect(Math.max(...heard.map(Math.abs))).toBeGreaterThan(1000);
    const record = await callEnded(t, callId);
    expect(record.disconnection_reason).toBe('user_hangup');
    // The call ran at the line's rate: the recording on disk is kept at it (the API serves every one at 16 kHz).
    const wav = readFileSync(join(t.dataDir, 'recordings', `${callId}.wav`));
    expect(wav.readUInt32LE(24)).toBe(16000);
  }, 60_000);
});
