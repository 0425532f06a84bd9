// An organization's own Twilio account end to end, over real sockets, beside the service-wide one: the Twilio
// stand-in holds both accounts. A call to a number on the organization's account is signed with that account's
// token (the service-wide token is refused) and goes on over its media stream; a call the organization places from
// that number goes out under that account's SID, its progress callbacks are signed with its token, and the service
// hangs it up through the same account.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { CreateCallAck } from '../../src/http/schemas.ts';
import { CallRecordSchema } from '../../src/records/record.ts';
import { agentFinished, placeInboundCall, voiceWebhook } from '../helpers/phone.ts';
import { callEnded, startTestService, type TestService } from '../helpers/service.ts';
import { TwilioStandIn } from '../helpers/twilio-standin.ts';

let twilio: TwilioStandIn;
let own: { accountSid: string; authToken: string };
let t: TestService;
const OWN_NUMBER = '+14155558801';
const CALLEE = '+14155558802';

beforeAll(async () => {
  twilio = await new TwilioStandIn().start();
  own = twilio.addAccount();
  t = await startTestService({
    TWILIO_ACCOUNT_SID: twilio.accountSid,
    TWILIO_AUTH_TOKEN: twilio.authToken,
    TWILIO_API_BASE: twilio.url,
    RING_TIMEOUT_MS: '7000',
  });
  const created = await t.request('POST', '/v2/carrier-accounts', {
    body: {
      carrier: 'twilio',
      name: 'own',
      numbers: [OWN_NUMBER],
      credentials: { account_sid: own.accountSid, auth_token: own.authToken },
    },
  });
  expect(created.status, created.text).toBe(201);
  const demo = (await t.request('GET', '/v2/agents/demo')).body as Record<string, unknown>;
  const { agent_id: _id, version: _v, is_published: _p, last_modified: _m, ...config } = demo;
  const agent = await t.request('POST', '/v2/agents', {
    body: { ...config, agent_id: 'own-line', inbound_numbers: [OWN_NUMBER] },
  });
  expect(agent.status, agent.text).toBe(201);
}, 60_000);
afterAll(async () => {
  await t?.stop();
  await twilio?.close();
});

const record = async (callId: string) => CallRecordSchema.parse((await t.request('GET', `/v2/calls/${callId}`)).body);

describe("an organization's own Twilio account", () => {
  it('takes a call to its number signed with its own token (the service-wide token is refused), over its media stream', async () => {
    const signedByService = await voiceWebhook(
      t.url,
      { CallSid: `CA${randomBytes(16).toString('hex')}`, From: '+14155550100', To: OWN_NUMBER },
      twilio.authToken,
    );
    expect(signedByService.status).toBe(403);

    const { caller, callId } = await placeInboundCall(t.url, OWN_NUMBER, '+14155550100', {
      authToken: own.authToken,
    });
    // The stream is the call's: it goes on once the start message is taken (however slowly the greeting comes).
    await vi.waitFor(async () => expect((await record(callId)).call_status).toBe('ongoing'), {
      timeout: 20_000,
      interval: 100,
    });
    // The greeting plays (the engines are then loaded: a call hung up while they load leaves them closing mid-load).
    await agentFinished(caller, { after: 0, timeoutMs: 40_000 });
    await caller.hangUp();
    expect(await callEnded(t, callId, 20_000)).toMatchObject({
      call_type: 'inbound',
      call_to: OWN_NUMBER,
      disconnection_reason: 'user_hangup',
    });
  }, 60_000);

  it("places a call from its number under its own SID, takes the call's callbacks signed with its token, and hangs up through it", async () => {
    let greeted!: () => void;
    const greeting = new Promise<void>((resolve) => (greeted = resolve));
    twilio.behaviors.set(CALLEE, {
      kind: 'answer',
      talk: async (caller) => {
        await agentFinished(caller, { after: 0, timeoutMs: 40_000 });
        greeted();
        await caller.waitForClose();
      },
    });
    const res = await t.request('POST', '/v2/calls', {
      body: { call_from: OWN_NUMBER, call_to: CALLEE, agent_id: 'own-line' },
    });
    expect(res.status, res.text).toBe(201);
    const callId = CreateCallAck.parse(res.body).call_id;
    // Answered: the stand-in opened the media stream the call's TwiML names, and the call went on.
    await vi.waitFor(async () => expect((await record(callId)).call_status).toBe('ongoing'), {
      timeout: 20_000,
      interval: 100,
    });
    await greeting;
    const placed = twilio.calls.find((c) => c.form.To === CALLEE)!;
    expect(placed.accountSid).toBe(own.accountSid);
    expect(placed.accountSid).not.toBe(twilio.accountSid);

    await t.service.dialer.hangUpCall!(callId);
    expect(twilio.hangups).toContain(placed.sid);
    await placed.done;
    await callEnded(t, callId, 20_000);
    // Every progress callback, signed with the organization's token, was taken (a wrong key is a 403).
    await vi.waitFor(() => expect(placed.callbacks.map((c) => c.status)).toContain('completed'));
    expect(placed.callbacks.map((c) => c.httpStatus)).toEqual(placed.callbacks.map(() => 204));
  }, 60_000);
});
