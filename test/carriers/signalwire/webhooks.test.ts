// SignalWire against the real service, through its stand-in (Twilio's with SignalWire's profile): the voice
// webhook's shared cases (test/carriers/webhook-cases.ts: only what the called number's SignalWire account signed
// with its Signing Key is taken, a CallSid sent again gets the first answer); here, the API token is no signing
// key, the X-Twilio-Signature alias is taken, the cXML answer asks for a wideband stream (L16@16000h) that carries
// 16 kHz L16 both ways; outbound calls go to the space's LaML API with the project's basic auth and report back,
// signed, to SignalWire's own status route; a cold transfer to a busy destination brings the caller back on a
// wideband stream.
import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { twilioSignature } from '../../../src/carriers/twilio/signature.ts';
import { agentFinished, fixtureUlaw } from '../../helpers/phone.ts';
import { callEnded, type TestService } from '../../helpers/service.ts';
import { SignalWireStandIn } from '../../helpers/signalwire-standin.ts';
import { coldTransferToBusy, carrierDesk, webhookCases, type WebhookBody } from '../webhook-cases.ts';

const NUMBER = '+15550700001';
const ELSEWHERE = '+15550700002';
const DESK_BUSY = '+15550700020';
const AGENT = 'signalwire-desk';
let t: TestService;
let signalwire: SignalWireStandIn;
let accountText: string;

const desk = carrierDesk({
  carrier: 'signalwire',
  start: () => new SignalWireStandIn().start(),
  env: (signalwire) => ({ SIGNALWIRE_API_BASE: signalwire.url }),
  credentials: (signalwire) => signalwire.credentials(),
  busy: (signalwire, phone) => signalwire.behaviors.set(phone, { kind: 'busy' }),
  number: NUMBER,
  elsewhere: ELSEWHERE,
  agentId: AGENT,
  busyDesk: DESK_BUSY,
  created: (text) => {
    accountText = text;
  },
});
beforeAll(() => {
  t = desk.t();
  signalwire = desk.standIn();
});

const params = (to: string) => ({
  CallSid: randomUUID(),
  AccountSid: signalwire.accountSid,
  From: '+14155550100',
  To: to,
});
const voice = (body: WebhookBody, headers: Record<string, string>) =>
  fetch(`${t.url}/telephony/signalwire/voice`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    body: new URLSearchParams(body).toString(),
  });
const signed = (body: WebhookBody, key: string, header = 'x-signalwire-signature') => ({
  [header]: twilioSignature(key, `${t.url}/telephony/signalwire/voice`, body),
});
const CXML =
  /^<\?xml version="1.0" encoding="UTF-8"\?><Response><Connect><Stream url="ws:\/\/[^"]+\/media\/signalwire" codec="L16@16000h"><Parameter name="call_id" value="[^"]+"\/><Parameter name="secret" value="[^"]+"\/><\/Stream><\/Connect><\/Response>$/;

webhookCases({
  name: 'SignalWire',
  mediaPath: '/media/signalwire',
  service: () => t,
  number: NUMBER,
  elsewhere: ELSEWHERE,
  agentId: AGENT,
  body: params,
  changed: (body) => ({ ...body, From: '+14155550199' }),
  send: voice,
  sign: async (body, key) => signed(body, key === 'account' ? signalwire.signingKey : 'another-signing-key'),
  streamOf: (cxml) => {
    expect(cxml).toMatch(CXML);
    return {
      path: new URL(/<Stream url="([^"]+)"/.exec(cxml)![1]!).pathname,
      callId: /name="call_id" value="([^"]+)"/.exec(cxml)![1]!,
      secret: /name="secret" value="([^"]+)"/.exec(cxml)![1]!,
    };
  },
  recordOf: (body) => ({ metadata: { signalwire_call_sid: body.CallSid } }),
});

describe('SignalWire voice webhook', () => {
  it('is refused 403, with no call, signed with the API token rather than the Signing Key', async () => {
    const body = params(NUMBER);
    const res = await voice(body, signed(body, signalwire.authToken));
    expect(res.status).toBe(403);
    expect((await t.request('POST', '/v2/calls/list', { body: {} })).text).not.toContain(body.CallSid);
  });

  it('signed with the Signing Key under the X-Twilio-Signature alias, it answers the same cXML and registers the call', async () => {
    const body = params(NUMBER);
    const res = await voice(body, signed(body, signalwire.signingKey, 'x-twilio-signature'));
    expect(res.status).toBe(200);
    const cxml = await res.text();
    expect(cxml).toMatch(CXML);
    const callId = /name="call_id" value="([^"]+)"/.exec(cxml)![1]!;
    expect((await t.request('GET', `/v2/calls/${callId}`)).body).toMatchObject({
      call_type: 'inbound',
      agent_id: AGENT,
      metadata: { signalwire_call_sid: body.CallSid },
    });
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
  it('answers its creation without the API token or the Signing Key', () => {
    const secrets = Object.values(signalwire.credentials()).slice(1);
    expect(secrets.length).toBeGreaterThan(0);
    for (const secret of secrets) expect(accountText).not.toContain(secret);
  });

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
    const { callId } = await coldTransferToBusy(
      {
        ...desk.transfer,
        busy: 'busy',
        answer: (to, talk, afterTransfer) => signalwire.behaviors.set(to, { kind: 'answer', talk, afterTransfer }),
        transfersOf: (to) =>
          signalwire.calls
            .find((c) => c.form.To === to)!
            .transfers.map(({ to: destination, dialStatus }) => ({ to: destination, outcome: dialStatus })),
      },
      phone,
    );
    const placed = signalwire.calls.find((c) => c.form.To === phone)!;
    expect(placed.accountSid).toBe(signalwire.accountSid);
    expect(String(placed.form.Twiml)).toContain('codec="L16@16000h"');
    expect(String(placed.form.StatusCallback)).toContain(`/telephony/signalwire/status?call_id=${callId}`);
    expect(placed.callbacks.map((c) => c.httpStatus)).not.toContain(403);
    expect(placed.transfers[0]!.twimlBack).toContain('codec="L16@16000h"');
  }, 90_000);
});
