// The carrier conformance suite: every registered carrier passes the same cases, against the real service over real
// sockets. Each carrier's test driver (test/carriers/<name>/driver.ts) stands in for its far side, and its phones run
// the same scripts (test/carriers/conformance.ts). One service per test file serves that file's carriers at once, as
// production would with simulated phones in front of a real carrier; the carriers are spread over a few files
// (test/e2e/carrier-conformance-*.test.ts, CONFORMANCE_GROUPS in test/carriers/drivers.ts) that run side by side.
// Calls are short (a greeting, one phrase) and run two at a time in a file. A carrier with inbound calls hears its
// caller's words, keypad and hang-up in one inbound call; a carrier that runs another's code (SignalWire runs
// Twilio's) leaves the cases only that code decides to the other. SIP trunks' far side is a SIP phone on the project's
// own user agent; they have no media stream to open without its secret (CarrierDriver says which); their cold transfer
// is REFER. A carrier that can join two calls also runs a warm transfer (CarrierDriver.warmTransfer).
import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { CallRecord } from '../../src/records/record.ts';
import { callEnded, startTestService, type TestService } from '../helpers/service.ts';
import { writeScripts, type CarrierDriver, type ScriptName } from './conformance.ts';

/** Long enough to talk over, short enough to keep each call short. */
const greeting = 'Hello, you have reached the front desk. How can I help you today?';
/** The demo model says goodbye and hangs up to any answer to this (src/demo/script.ts). */
const LAST_QUESTION = 'Hello, you have reached the front desk. Is there anything else I can help you with?';
/**
 * The greeting the caller talks over: long enough that the cut lands inside it even when a loaded machine reads the
 * cut-in late (with the short greeting, a fresh-clone run once heard it whole), and cut, so the call stays short.
 */
const LONG_GREETING =
  'Hello, you have reached the front desk of the demo clinic. We are open from eight in the morning until six in the evening, Monday to Friday. How can I help you today?';
/** The warm transfer's greeting: short, as the summary the desk hears takes seconds of the call. */
const SHORT_GREETING = 'Front desk, how can I help?';

/** The conformance cases of `drivers`' carriers, against one service: called once at the top of a test file. */
export function conformanceSuite(drivers: readonly CarrierDriver[]): void {
  // Two calls at a time: more, on a small machine, starve the recogniser and the scripts' waits run out.
  vi.setConfig({ maxConcurrency: 2 });

  let t: TestService;
  let scriptsDir: string;
  /** Where outbound calls come from unless a driver names its own: Twilio's agent's number, shown to the callee. */
  const FROM = drivers.find((d) => d.carrier === 'twilio')?.inbound?.number ?? '+14155550100';

  beforeAll(async () => {
    scriptsDir = writeScripts();
    for (const driver of drivers) await driver.start(scriptsDir);
    // The phones speak from the first call on: the recogniser is loaded first (test/helpers/service.ts).
    t = await startTestService(
      {
        ...Object.assign({}, ...drivers.map((d) => d.env())),
        SIM_SCRIPTS_DIR: scriptsDir,
        RING_TIMEOUT_MS: '3000',
        RATE_LIMIT_PER_MINUTE: '100000',
      },
      { recogniserLoaded: true },
    );
    for (const driver of drivers) await driver.setUp?.(t);
    const demo = (await t.request('GET', '/v2/agents/demo')).body as Record<string, unknown> & { tools: unknown[] };
    const { agent_id: _id, version: _v, is_published: _p, last_modified: _m, ...config } = demo;
    for (const driver of drivers) {
      const body = {
        ...config,
        begin_message: greeting,
        agent_id: `conf-${driver.carrier}`,
        inbound_numbers: driver.inbound ? [driver.inbound.number] : [],
        tools: [...demo.tools, { type: 'transfer_call', transfer_to: driver.desk }],
      };
      const created = await t.request('POST', '/v2/agents', { body });
      expect(created.status, created.text).toBe(201);
      const closing = await t.request('POST', '/v2/agents', {
        body: { ...config, begin_message: LAST_QUESTION, agent_id: `conf-${driver.carrier}-bye` },
      });
      expect(closing.status, closing.text).toBe(201);
      const talkedOver = await t.request('POST', '/v2/agents', {
        body: { ...config, begin_message: LONG_GREETING, agent_id: `conf-${driver.carrier}-long` },
      });
      expect(talkedOver.status, talkedOver.text).toBe(201);
      if (driver.warmTransfer) {
        const warm = await t.request('POST', '/v2/agents', {
          body: {
            ...config,
            begin_message: SHORT_GREETING,
            agent_id: `conf-${driver.carrier}-warm`,
            tools: [...demo.tools, { type: 'transfer_call', transfer_to: driver.desk, mode: 'warm' }],
          },
        });
        expect(warm.status, warm.text).toBe(201);
      }
    }
  }, 60_000);
  afterAll(async () => {
    await t?.stop();
    for (const driver of drivers) await driver.close();
    rmSync(scriptsDir, { recursive: true, force: true });
  });

  async function dial(driver: CarrierDriver, to: string, agent: '' | '-bye' | '-long' | '-warm' = ''): Promise<string> {
    const agentId = `conf-${driver.carrier}${agent}`;
    const res = await t.request('POST', '/v2/calls', {
      body: { call_from: driver.from ?? FROM, call_to: to, agent_id: agentId },
    });
    expect(res.status, res.text).toBe(201);
    return (res.body as { call_id: string }).call_id;
  }

  const call = async (driver: CarrierDriver, script: ScriptName): Promise<CallRecord> =>
    callEnded(t, await dial(driver, driver.answering(script)), 60_000);
  const lines = (record: CallRecord) => (record.transcript ?? []).map((m) => `${m.role}: ${m.content}`);

  describe.each(drivers.map((driver) => [driver.carrier, driver] as const))('%s', (_name, driver) => {
    it.concurrent(
      'an answered call carries words both ways; the agent ending it hangs the carrier leg up',
      async () => {
        const callId = await dial(driver, driver.answering('conf-no-thanks'), '-bye');
        const record = await callEnded(t, callId, 60_000);
        expect(record, JSON.stringify(lines(record))).toMatchObject({
          call_type: 'outbound',
          call_status: 'ended',
          disconnection_reason: 'agent_hangup',
        });
        expect(lines(record)[0]).toBe(`agent: ${LAST_QUESTION}`);
        expect(lines(record)[1]).toMatch(/^user: No,? thank you/i);
        expect(lines(record).at(-1)).toMatch(/^agent: .*Goodbye!$/);
        await driver.hungUpByService?.(callId);
        // Voice to voice on each carrier's path, all in one run (issue 40's comparison): the agent's answer to the
        // callee's words, as the service measured it.
        console.log(`[carrier v2v] ${driver.carrier}: latency.e2e ${JSON.stringify(record.latency?.e2e ?? null)}`);
      },
      90_000,
    );

    // A carrier with inbound calls runs its caller's hang-up and keypad digits in the inbound case's one call; the
    // simulated phones, which only answer, run them here.
    const callerCasesOutbound = !driver.inbound;
    // What only another carrier's code decides runs on that carrier (CarrierDriver.sharesCallCodeWith).
    const ownCallCode = driver.sharesCallCodeWith === undefined;

    if (callerCasesOutbound)
      it.concurrent(
        'the callee hanging up ends the call user_hangup',
        async () => {
          const record = await call(driver, 'conf-hangs-up');
          expect(record, JSON.stringify(lines(record))).toMatchObject({
            call_status: 'ended',
            disconnection_reason: 'user_hangup',
          });
          expect(lines(record)[1]).toMatch(/^user: Yes,? please/i);
          expect(record.transcript!.at(-1)!.role).toBe('agent');
        },
        90_000,
      );

    if (ownCallCode)
      it.concurrent(
        'talking over the greeting cuts it: the message keeps only what was heard',
        async () => {
          const record = await callEnded(t, await dial(driver, driver.answering('conf-barges-in'), '-long'), 60_000);
          const first = record.transcript![0]!;
          expect(first.role).toBe('agent');
          expect(
            LONG_GREETING.startsWith(first.content) && first.content.length < LONG_GREETING.length,
            JSON.stringify(lines(record)),
          ).toBe(true);
          expect(lines(record)[1]).toMatch(/^user: No,? thank you/i);
        },
        90_000,
      );

    if (callerCasesOutbound)
      it.concurrent(
        'a key pressed on the phone reaches the agent as a keypad turn',
        async () => {
          const record = await call(driver, 'conf-keypad');
          expect(
            record.transcript!.find((m) => m.input === 'keypad'),
            JSON.stringify(lines(record)),
          ).toMatchObject({ role: 'user', content: '1' });
          expect(record.disconnection_reason).toBe('user_hangup');
        },
        90_000,
      );

    it.concurrent(
      'a busy phone and one that rings out end not connected: dial_failed and dial_no_answer',
      async () => {
        const [busy, unanswered] = await Promise.all([
          callEnded(t, await dial(driver, driver.busy)),
          callEnded(t, await dial(driver, driver.noAnswer)),
        ]);
        expect(busy).toMatchObject({ call_status: 'not_connected', disconnection_reason: 'dial_failed' });
        expect(unanswered).toMatchObject({ call_status: 'not_connected', disconnection_reason: 'dial_no_answer' });
      },
      90_000,
    );

    if (ownCallCode)
      it.concurrent(
        'a cold transfer to a destination that answers moves the caller on: call_transfer',
        async () => {
          const record = await call(driver, 'conf-transfer-me');
          expect(record, JSON.stringify(lines(record))).toMatchObject({
            call_status: 'ended',
            disconnection_reason: 'call_transfer',
            transfer_destination: driver.desk,
          });
          expect(lines(record).at(-1)).toBe('agent: Let me transfer you.');
        },
        90_000,
      );

    // Where the carrier can join two calls (CarrierDriver.warmTransfer): one call, whose desk only listens.
    const warmTransfer = driver.warmTransfer;
    if (ownCallCode && warmTransfer)
      it.concurrent(
        'a warm transfer tells the desk that answers a summary, then joins it to the caller: call_transfer',
        async () => {
          const callId = await dial(driver, driver.answering('conf-transfer-me'), '-warm');
          const record = await callEnded(t, callId, 60_000);
          expect(record, JSON.stringify(lines(record))).toMatchObject({
            call_status: 'ended',
            disconnection_reason: 'call_transfer',
            transfer_destination: driver.desk,
          });
          // The demo model's summary (src/demo/script.ts), said in full on the desk's leg before the join.
          expect(record.disconnection_message).toMatch(
            /after telling them: Hi, this is the demo front desk\. I have a caller who asked to speak with a person\.$/,
          );
          expect(await warmTransfer.joined(callId)).toBe(true);
        },
        90_000,
      );

    // Only where the carrier's media is a stream the service serves (CarrierDriver.streamWithoutSecret).
    const streamWithoutSecret = driver.streamWithoutSecret?.bind(driver);
    if (streamWithoutSecret)
      it.concurrent(
        'a media stream without its secret is closed 1008 and does not take the call',
        async () => {
          const callId = await dial(driver, driver.noAnswer);
          expect(await streamWithoutSecret(t.url, callId)).toBe(1008);
          expect(await callEnded(t, callId)).toMatchObject({
            call_status: 'not_connected',
            disconnection_reason: 'dial_no_answer',
          });
        },
        90_000,
      );

    if (driver.inbound) {
      const inbound = driver.inbound;
      it.concurrent(
        'an inbound call is answered by the agent that holds the number: words and a key both ways, then the caller hangs up',
        async () => {
          const record = await callEnded(t, await inbound.call(t.url, 'conf-caller'), 60_000);
          expect(record, JSON.stringify(lines(record))).toMatchObject({
            call_type: 'inbound',
            call_to: inbound.number,
            agent_id: `conf-${driver.carrier}`,
            disconnection_reason: 'user_hangup',
          });
          expect(lines(record)[0]).toBe(`agent: ${greeting}`);
          expect(lines(record)[1]).toMatch(/^user: Yes,? please/i);
          expect(
            record.transcript!.find((m) => m.input === 'keypad'),
            JSON.stringify(lines(record)),
          ).toMatchObject({ role: 'user', content: '1' });
          expect(record.transcript!.at(-1)!.role).toBe('agent');
        },
        90_000,
      );

      // SIP's equivalent of a badly signed webhook is an INVITE no trunk admits (CarrierDriver.inbound.badlySigned).
      it.concurrent(
        'an inbound call the carrier did not sign or a trunk does not admit is refused 403 and places no call',
        async () => {
          const before = ((await t.request('POST', '/v2/calls/list', { body: {} })).body as { total_count: number })
            .total_count;
          const res = await inbound.badlySigned(t.url);
          expect(res.status).toBe(403);
          expect(
            ((await t.request('POST', '/v2/calls/list', { body: {} })).body as { total_count: number }).total_count,
          ).toBe(before);
        },
      );
    }
  });
}
