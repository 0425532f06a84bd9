// Cold transfers on a Twilio line, end to end against the Twilio REST stand-in: the caller asks to
// be put through, the agent says its line, the live call is redirected to a <Dial> of the
// destination. One that answers takes the caller (call_transfer, with where and when); one that is
// busy sends the caller back to the agent on a new stream of the same call, and the agent says so.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { CreateCallAck } from '../../src/http/schemas.ts';
import { DEMO_TRANSFER_FAILED } from '../../src/demo/script.ts';
import type { TwilioStreamCaller } from '../../src/carriers/sim/twilio-stream.ts';
import { agentFinished, fixtureUlaw } from '../helpers/phone.ts';
import { callEnded, startTestService, type TestService } from '../helpers/service.ts';
import { TwilioStandIn } from '../helpers/twilio-standin.ts';

// Calls are real time and wait on the line most of it: the two cold cases (one call each, each to its own phone)
// run side by side, two calls at a time as test/carriers/conformance-suite.ts runs them (more, on a small machine,
// starve the recogniser); the warm case, two calls and a second leg, runs alone.
vi.setConfig({ maxConcurrency: 2 });

let twilio: TwilioStandIn;
let t: TestService;
const DESK_ANSWERS = '+14155557001';
const DESK_BUSY = '+14155557002';

beforeAll(async () => {
  twilio = await new TwilioStandIn().start();
  t = await startTestService(
    {
      TWILIO_ACCOUNT_SID: twilio.accountSid,
      TWILIO_AUTH_TOKEN: twilio.authToken,
      TWILIO_API_BASE: twilio.url,
      RING_TIMEOUT_MS: '7000',
    },
    { recogniserLoaded: true },
  );
  const demo = (await t.request('GET', '/v2/agents/demo')).body as Record<string, unknown> & { tools: unknown[] };
  const { agent_id: _id, version: _v, is_published: _p, last_modified: _m, ...config } = demo;
  const agents = [
    ['desk-answers', DESK_ANSWERS, 'cold'],
    ['desk-busy', DESK_BUSY, 'cold'],
    ['warm-desk', DESK_ANSWERS, 'warm'],
    ['warm-busy', DESK_BUSY, 'warm'],
  ] as const;
  for (const [id, to, mode] of agents) {
    const body = {
      ...config,
      agent_id: id,
      inbound_numbers: id === 'desk-answers' ? ['+14155550100'] : [],
      tools: [...demo.tools, { type: 'transfer_call', transfer_to: to, mode }],
    };
    expect((await t.request('POST', '/v2/agents', { body })).status).toBe(201);
  }
  twilio.behaviors.set(DESK_ANSWERS, { kind: 'answer' });
  twilio.behaviors.set(DESK_BUSY, { kind: 'busy' });
}, 60_000);
afterAll(async () => {
  await t?.stop();
  await twilio?.close();
});

/** The callee asks to be transferred once the greeting has played, then stays on until the line closes. */
const asksForTransfer = async (caller: TwilioStreamCaller) => {
  await agentFinished(caller, { after: 0, timeoutMs: 30_000 });
  await caller.speak(fixtureUlaw('11-can-i-speak-to'));
  await caller.waitForClose();
};

async function place(to: string, agentId: string): Promise<string> {
  const res = await t.request('POST', '/v2/calls', {
    body: { call_from: '+14155550100', call_to: to, agent_id: agentId },
  });
  expect(res.status, res.text).toBe(201);
  return CreateCallAck.parse(res.body).call_id;
}

describe('warm transfer on a Twilio line', () => {
  it('calls the destination as a second leg whose stream hears the summary while the caller hears hold music, then moves both legs into one conference: call_transfer; a busy second leg ends the hold and the agent says so', async () => {
    twilio.behaviors.set('+15550007103', { kind: 'answer', talk: asksForTransfer });
    twilio.behaviors.set('+15550007104', { kind: 'answer', talk: asksForTransfer });
    const callId = await place('+15550007103', 'warm-desk');
    const busyCallId = await place('+15550007104', 'warm-busy');
    const busy = callEnded(t, busyCallId, 60_000);
    const record = await callEnded(t, callId, 60_000);
    const placed = twilio.calls.find((c) => c.form.To === '+15550007103')!;
    const leg = twilio.calls.find(
      (c) => c.form.To === DESK_ANSWERS && String(c.form.StatusCallback).includes('leg=consult'),
    )!;
    expect(record).toMatchObject({
      call_status: 'ended',
      disconnection_reason: 'call_transfer',
      transfer_destination: DESK_ANSWERS,
    });
    // The call ends as the legs are bridged: nothing is left to play to the caller.
    expect(record.end_timestamp! - record.transfer_timestamp!).toBeLessThan(1_000);
    expect(record.disconnection_message).toMatch(
      /after telling them: Hi, this is the demo front desk\. I have a caller who asked to speak with a person\.$/,
    );
    // Both legs are in the same conference, and neither was hung up by the service.
    expect(placed.conference).toBe(`transfer-${callId}`);
    expect(leg.conference).toBe(`transfer-${callId}`);
    expect(twilio.hangups).not.toContain(placed.sid);
    // The second leg heard the summary (seconds of speech); the caller heard hold music meanwhile.
    const loud = (frames: { payload: Buffer }[]) =>
      frames.filter((f) => f.payload.some((b) => (b & 0x7f) < 0x70)).length;
    expect(loud(leg.stream!.played)).toBeGreaterThan(100);
    const lineEnd = record.start_timestamp! + record.transcript!.at(-1)!.end_at * 1000;
    const heldFrames = placed.stream!.played.filter((f) => f.at > lineEnd - record.start_timestamp! + 500);
    expect(loud(heldFrames)).toBeGreaterThan(50);

    // The busy second leg: still with the agent, who says it could not put the caller through (the caller hangs up
    // after).
    await vi.waitFor(
      async () => {
        const r = (await t.request('GET', `/v2/calls/${busyCallId}`)).body as {
          transcript: { role: string; content: string }[];
        };
        expect(r.transcript.map((m) => m.content)).toContain(DEMO_TRANSFER_FAILED);
      },
      { timeout: 30_000, interval: 200 },
    );
    void twilio.calls.find((c) => c.form.To === '+15550007104')!.stream!.hangUp();
    expect(await busy).toMatchObject({ disconnection_reason: 'user_hangup', transfer_destination: null });
  }, 90_000);
});

describe.concurrent('cold transfer on a Twilio line', () => {
  it('redirects the call to a <Dial> after the agent spoke its line; the destination answering ends the call call_transfer with where and when', async () => {
    twilio.behaviors.set('+15550007101', { kind: 'answer', talk: asksForTransfer });
    const callId = await place('+15550007101', 'desk-answers');
    const record = await callEnded(t, callId, 60_000);
    const placed = twilio.calls.find((c) => c.form.To === '+15550007101')!;
    // The record ends when the destination answers; the <Dial action> comes once that call is over.
    await placed.redirect;
    expect(placed.transfers).toEqual([
      {
        to: DESK_ANSWERS,
        dialStatus: 'completed',
        twimlBack: expect.stringContaining('<Hangup/>') as unknown as string,
      },
    ]);
    expect(record).toMatchObject({
      call_status: 'ended',
      disconnection_reason: 'call_transfer',
      transfer_destination: DESK_ANSWERS,
      disconnection_message: `Transferred to ${DESK_ANSWERS}.`,
    });
    expect(record.transfer_timestamp).toBeGreaterThanOrEqual(record.start_timestamp!);
    expect(record.transfer_timestamp).toBeLessThanOrEqual(record.end_timestamp!);
    // The agent's line before the transfer was heard in full.
    expect(record.transcript!.at(-1)).toMatchObject({ role: 'agent', content: 'Let me transfer you.' });
    // The service never hangs up a transferred call: the carrier leg is the caller's now.
    expect(twilio.hangups).not.toContain(placed.sid);
  }, 90_000);

  it('brings the caller back on a new stream of the same call when the destination is busy, and the agent says it could not put them through', async () => {
    let heardBack = '';
    twilio.behaviors.set('+15550007102', {
      kind: 'answer',
      talk: asksForTransfer,
      afterTransfer: async (caller) => {
        await agentFinished(caller, { after: 0, timeoutMs: 30_000 });
        heardBack = 'yes';
        await caller.hangUp();
      },
    });
    const callId = await place('+15550007102', 'desk-busy');
    const record = await callEnded(t, callId, 60_000);
    const placed = twilio.calls.find((c) => c.form.To === '+15550007102')!;
    expect(placed.transfers).toHaveLength(1);
    expect(placed.transfers[0]).toMatchObject({ to: DESK_BUSY, dialStatus: 'busy' });
    expect(placed.transfers[0]!.twimlBack).toContain('<Connect><Stream');
    expect(heardBack).toBe('yes');
    expect(record).toMatchObject({
      call_status: 'ended',
      disconnection_reason: 'user_hangup',
      transfer_destination: null,
    });
    const agent = record.transcript!.filter((m) => m.role === 'agent').map((m) => m.content);
    expect(agent.slice(-2)).toEqual(['Let me transfer you.', DEMO_TRANSFER_FAILED]);
    // The caller's time away is on the call's clock: the message back starts after the line before it ended.
    const [line, back] = record.transcript!.slice(-2);
    expect(back!.start_at).toBeGreaterThan(line!.end_at);
  }, 90_000);
});
