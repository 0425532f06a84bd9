// Transfers between simulated phones, as README shows them: the caller asks for a person, the
// agent transfers it to another simulated phone. A busy one sends the caller back on a new stream of
// the same call, where the caller's script goes on and hears the agent say it could not put them
// through; a warm transfer holds the caller while the destination hears a summary. (A cold transfer
// to one that answers is test/carriers/conformance-suite.ts's, for every carrier.)
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { CallRecord } from '../../src/records/record.ts';
import { DEMO_TRANSFER_FAILED } from '../../src/demo/script.ts';
import { callEnded, startTestService, type TestService } from '../helpers/service.ts';

// One call each (a warm one with the leg to its destination): two at a time, as
// test/carriers/conformance-suite.ts runs them (more, on a small machine, starve the recogniser).
vi.setConfig({ maxConcurrency: 2 });

let t: TestService;
const CALLER = '+15550005';
const BUSY_DESK = '+15550007';
const ALEX = '+15550008';

beforeAll(async () => {
  t = await startTestService({
    SIM_NUMBERS: `${CALLER}=answer:transfer-me,${BUSY_DESK}=busy,${ALEX}=answer:front-desk`,
    SIM_ANSWER_DELAY_MS: '200',
  });
  const demo = (await t.request('GET', '/v2/agents/demo')).body as Record<string, unknown> & { tools: unknown[] };
  const { agent_id: _id, version: _v, is_published: _p, last_modified: _m, ...config } = demo;
  for (const [id, to, mode] of [
    ['to-busy-desk', BUSY_DESK, 'cold'],
    ['warm-to-alex', ALEX, 'warm'],
    ['warm-to-busy', BUSY_DESK, 'warm'],
  ] as const) {
    const body = { ...config, agent_id: id, tools: [...demo.tools, { type: 'transfer_call', transfer_to: to, mode }] };
    expect((await t.request('POST', '/v2/agents', { body })).status).toBe(201);
  }
}, 60_000);
afterAll(async () => t?.stop());

async function call(agentId: string): Promise<CallRecord> {
  const placed = await t.request('POST', '/v2/calls', {
    body: { call_from: '+14155550100', call_to: CALLER, agent_id: agentId },
  });
  expect(placed.status).toBe(201);
  return callEnded(t, (placed.body as { call_id: string }).call_id);
}

describe.concurrent('transfers between simulated phones', () => {
  it('cold: a busy destination sends the caller back on a new stream of the same call, whose script goes on and hears the agent say it could not put them through', async () => {
    const back = await call('to-busy-desk');
    expect(t.logs.filter((l) => l.includes('script failed'))).toEqual([]);

    expect(back).toMatchObject({
      call_status: 'ended',
      disconnection_reason: 'agent_hangup',
      transfer_destination: null,
    });
    const lines = back.transcript!.map((m) => `${m.role}: ${m.content}`);
    const asked = lines.indexOf('agent: Let me transfer you.');
    expect(asked).toBeGreaterThan(0);
    expect(lines[asked + 1]).toBe(`agent: ${DEMO_TRANSFER_FAILED}`);
    expect(lines[asked + 2]).toMatch(/^user: No,? thank you/i);
    expect(lines.at(-1)).toMatch(/^agent: Thank you for calling the demo front desk\. Goodbye!$/);
  }, 120_000);

  it('warm: the caller holds while the destination is called; who answers hears the summary, then both are bridged (call_transfer)', async () => {
    const bridged = await call('warm-to-alex');
    expect(t.logs.filter((l) => l.includes('script failed'))).toEqual([]);

    expect(bridged).toMatchObject({
      call_status: 'ended',
      disconnection_reason: 'call_transfer',
      transfer_destination: ALEX,
    });
    expect(bridged.end_timestamp! - bridged.transfer_timestamp!).toBeLessThan(1_000);
    expect(bridged.disconnection_message).toBe(
      `Transferred to ${ALEX} after telling them: Hi, this is the demo front desk. I have a caller who asked to speak with a person.`,
    );
    expect(bridged.transcript!.at(-1)).toMatchObject({ role: 'agent', content: 'Let me transfer you.' });
    // The summary went to the person who answered, while the caller heard hold music (audio, no words in the
    // transcript).
    expect(bridged.transfer_timestamp! - bridged.start_timestamp!).toBeGreaterThan(
      bridged.transcript!.at(-1)!.end_at * 1000 + 2000,
    );
  }, 120_000);

  it('warm: a busy destination ends the hold and the agent says so', async () => {
    const busy = await call('warm-to-busy');
    expect(t.logs.filter((l) => l.includes('script failed'))).toEqual([]);

    expect(busy).toMatchObject({
      call_status: 'ended',
      disconnection_reason: 'agent_hangup',
      transfer_destination: null,
    });
    const lines = busy.transcript!.map((m) => `${m.role}: ${m.content}`);
    const asked = lines.indexOf('agent: Let me transfer you.');
    expect(lines[asked + 1]).toBe(`agent: ${DEMO_TRANSFER_FAILED}`);
  }, 120_000);
});
