// The first call a newcomer makes, as README shows it: an outbound call to a simulated phone
// whose shipped script listens before it speaks, the first call of a fresh service (its speech
// engines still opening when the phone answers). A Twilio-protocol caller speaking the same
// phrases joins once it is under way, so both paths are measured under the same load: the
// simulated call must be as fast, overlap nowhere, and book what the caller said. (The engines'
// start once shifted the first call's clock by their opening time, ~2 s on every turn.)
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CallRecordSchema, type CallRecord } from '../../src/records/record.ts';
import { agentFinished, fixtureUlaw, placeInboundCall } from '../helpers/phone.ts';
import { callEnded, startTestService, type TestService } from '../helpers/service.ts';

let t: TestService;
const SIM_NUMBER = '+15550001';
const INBOUND_NUMBER = '+15550100031';

beforeAll(async () => {
  t = await startTestService(
    { SIM_NUMBERS: `${SIM_NUMBER}=answer:book-appointment`, SIM_ANSWER_DELAY_MS: '200' },
    { recogniserLoaded: true },
  );
  const demo = (await t.request('GET', '/v2/agents/demo')).body as Record<string, unknown>;
  const { agent_id: _id, version: _v, is_published: _p, last_modified: _m, ...config } = demo;
  expect(
    (
      await t.request('POST', '/v2/agents', {
        body: { ...config, agent_id: 'desk-inbound', inbound_numbers: [INBOUND_NUMBER] },
      })
    ).status,
  ).toBe(201);
}, 60_000);
afterAll(async () => t?.stop());

const ended = (callId: string): Promise<CallRecord> => callEnded(t, callId);

/** The simulated phone's conversation, spoken by a protocol caller that waits for the agent each time. */
async function twilioProtocolCall(): Promise<CallRecord> {
  const { caller, callId } = await placeInboundCall(t.url, INBOUND_NUMBER);
  await agentFinished(caller, { after: 0, timeoutMs: 30_000 });
  for (const phrase of [
    '02-i-would-like-to',
    '01-my-name-is-john',
    '14-next-monday-morning',
    '04-yes-please',
    '05-no-thank-you',
  ]) {
    const before = caller.played.length;
    await caller.speak(fixtureUlaw(phrase));
    await agentFinished(caller, { after: before, timeoutMs: 30_000 });
  }
  await caller.waitForClose();
  return ended(callId);
}

async function simulatedCall(): Promise<{ callId: string; record: Promise<CallRecord> }> {
  const placed = await t.request('POST', '/v2/calls', {
    body: { call_from: '+14155550100', call_to: SIM_NUMBER, agent_id: 'demo' },
  });
  expect(placed.status).toBe(201);
  const callId = (placed.body as { call_id: string }).call_id;
  return { callId, record: ended(callId) };
}

async function underWay(callId: string): Promise<void> {
  for (let i = 0; i < 300; i++) {
    if (CallRecordSchema.parse((await t.request('GET', `/v2/calls/${callId}`)).body).call_status === 'ongoing') return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error('the simulated call never started');
}

describe('the README simulated call', () => {
  it('has no overlaps, books the name and time the caller gave after reading them back, and answers within 200 ms of the Twilio path', async () => {
    const placed = await simulatedCall();
    await underWay(placed.callId);
    const [sim, phone] = await Promise.all([placed.record, twilioProtocolCall()]);

    expect(sim).toMatchObject({ call_status: 'ended', disconnection_reason: 'agent_hangup' });
    const spoken = sim.transcript!;
    for (let i = 1; i < spoken.length; i++) {
      // Nobody talks over anybody: each message starts after the one before it ended.
      expect(spoken[i]!.start_at, `${spoken[i - 1]!.content} / ${spoken[i]!.content}`).toBeGreaterThanOrEqual(
        spoken[i - 1]!.end_at,
      );
    }
    expect(spoken.map((m) => m.role)).toEqual([
      'agent',
      'user',
      'agent',
      'user',
      'agent',
      'user',
      'agent',
      'user',
      'agent',
      'agent',
      'user',
      'agent',
    ]);
    expect(spoken[6]!.content).toMatch(/I have you down for next Monday morning, John Smith\. Shall I book it\?/);
    const booking = sim.transcript_with_tool_calls!.find(
      (m) => m.role === 'tool_call_invocation' && m.name === 'book_appointment',
    );
    expect(booking).toMatchObject({ arguments: JSON.stringify({ name: 'John Smith', time: 'next Monday morning' }) });
    expect(spoken[9]!.content).toMatch(/^You're all set, John Smith\. I've booked you for next Monday morning\./);
    expect(t.logs.some((l) => l.includes('script failed'))).toBe(false);

    expect(
      phone.transcript_with_tool_calls!.find((m) => m.role === 'tool_call_invocation' && m.name === 'book_appointment'),
    ).toBeDefined();
    const simE2e = sim.latency!.e2e!;
    const phoneE2e = phone.latency!.e2e!;
    expect(simE2e.num).toBe(5);
    expect(phoneE2e.num).toBe(5);
    process.stdout.write(
      `\n[sim e2e] simulated call latency.e2e ${JSON.stringify(simE2e)}; Twilio-protocol call ${JSON.stringify(phoneE2e)}\n`,
    );
    expect(Math.abs(simE2e.p50 - phoneE2e.p50)).toBeLessThanOrEqual(200);
  }, 150_000);
});
