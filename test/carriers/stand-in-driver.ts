// What every stand-in carrier's conformance driver (test/carriers/<name>/driver.ts) does the same way, written once:
// its answering phones (one a script, in the carrier's own block of numbers) run the suite's scripts as a simulated
// phone does and stay on until the line closes; a busy phone, one that rings out and an answering desk; the
// organization's carrier account holding the inbound number; waiting for the service to hang the carrier's leg up;
// inbound calls whose callers run a script; where the stand-in joins calls, whether a warm transfer's legs were.
// Each driver says only what is its carrier's own: how its stand-in starts, is configured, names a placed call, and
// what its media stream and webhooks look like.
import pino from 'pino';
import { SimCallee } from '../../src/carriers/sim/callee.ts';
import { loadSimScript, type SimScript } from '../../src/carriers/sim/script.ts';
import { TwilioStreamCaller, type StreamDialect } from '../../src/carriers/sim/twilio-stream.ts';
import { SCRIPTS, type CarrierDriver, type ScriptName } from './conformance.ts';

const log = pino({ level: 'silent' });
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const CALLER = '+14155550100';

/** What a phone of a stand-in does when called. */
export type PhoneBehavior =
  { kind: 'answer'; talk?: (line: TwilioStreamCaller) => Promise<void> } | { kind: 'busy' } | { kind: 'no-answer' };

/** The stand-in's own side of a driver. */
export interface StandInCarrier<S extends { close(): Promise<void>; readonly hangups: string[] }> {
  readonly carrier: string;
  /** Where the answering phones' block starts: the script i answers at +1415555<phones + i>. */
  readonly phones: number;
  readonly busy: string;
  readonly noAnswer: string;
  readonly desk: string;
  /** The inbound number (its carrier account's); outbound calls come from it too unless `fromSuiteNumber`. */
  readonly number: string;
  /** Outbound calls come from the suite's default number (the carrier needs no account of the organization's). */
  readonly fromSuiteNumber?: boolean;
  readonly sharesCallCodeWith?: string;
  start(): Promise<S>;
  /** Gives `phone` its behavior on the stand-in (in the stand-in's own words for it). */
  behave(standIn: S, phone: string, behavior: PhoneBehavior): void;
  env(standIn: S): Record<string, string>;
  /** The organization's carrier account's credentials; absent when the service's own settings hold them. */
  credentials?(standIn: S): Record<string, string>;
  /** The carrier's id of the call it placed for `callId`, once placed: what its hang-ups list. */
  placedCallOf(standIn: S, callId: string): string | undefined;
  /** Rings the service at `to` from `from`: the caller's stream, once the service answered it. */
  placeInboundCall(
    standIn: S,
    serviceUrl: string,
    to: string,
    from: string,
  ): Promise<{ caller: TwilioStreamCaller; callId: string }>;
  badlySigned(standIn: S, serviceUrl: string, to: string, from: string): Promise<Response>;
  streamWithoutSecret(standIn: S, serviceUrl: string, callId: string): Promise<number>;
  /** Whether the stand-in joined the caller's leg of `callId` and its warm transfer's second leg; absent: it cannot. */
  joined?(standIn: S, callId: string): boolean;
}

/** A conformance driver for `spec`'s stand-in carrier. */
export function standInDriver<S extends { close(): Promise<void>; readonly hangups: string[] }>(
  spec: StandInCarrier<S>,
): CarrierDriver {
  const phones = Object.fromEntries(
    Object.keys(SCRIPTS).map((name, i) => [name, `+1415555${String(spec.phones + i)}`]),
  ) as Record<ScriptName, string>;
  const scripts = new Map<ScriptName, SimScript>();
  let standIn: S | undefined;
  const running = (): S => {
    if (!standIn) throw new Error(`the ${spec.carrier} stand-in is not started`);
    return standIn;
  };

  /** Runs `script` on a line as a simulated phone does, then stays on until the line closes (at most max_ms). */
  const runScript = async (line: TwilioStreamCaller, script: ScriptName): Promise<void> => {
    const loaded = scripts.get(script)!;
    await new SimCallee({ caller: line, script: loaded, random: () => 0.5, log }).run();
    if (!line.closed && loaded.steps.at(-1)?.kind !== 'hangup')
      await Promise.race([line.waitForClose(), sleep(loaded.maxMs)]);
  };
  const credentials = spec.credentials;
  const joined = spec.joined?.bind(spec);

  return {
    carrier: spec.carrier,
    busy: spec.busy,
    noAnswer: spec.noAnswer,
    desk: spec.desk,
    ...(spec.fromSuiteNumber ? {} : { from: spec.number }),
    ...(spec.sharesCallCodeWith ? { sharesCallCodeWith: spec.sharesCallCodeWith } : {}),
    async start(scriptsDir) {
      for (const name of Object.keys(SCRIPTS) as ScriptName[]) scripts.set(name, await loadSimScript(scriptsDir, name));
      const started = await spec.start();
      standIn = started;
      for (const [script, number] of Object.entries(phones))
        spec.behave(started, number, { kind: 'answer', talk: (line) => runScript(line, script as ScriptName) });
      spec.behave(started, spec.busy, { kind: 'busy' });
      spec.behave(started, spec.noAnswer, { kind: 'no-answer' });
      spec.behave(started, spec.desk, { kind: 'answer' });
    },
    async close() {
      await standIn?.close();
    },
    env: () => spec.env(running()),
    ...(credentials
      ? {
          async setUp(t) {
            const res = await t.request('POST', '/v2/carrier-accounts', {
              body: {
                carrier: spec.carrier,
                name: 'conformance',
                numbers: [spec.number],
                credentials: credentials(running()),
              },
            });
            if (res.status !== 201)
              throw new Error(`the ${spec.carrier} account was not created: ${res.status} ${res.text}`);
          },
        }
      : {}),
    answering: (script) => phones[script],
    async hungUpByService(callId) {
      for (let i = 0; i < 100; i++) {
        const placed = spec.placedCallOf(running(), callId);
        if (placed && running().hangups.includes(placed)) return;
        await sleep(50);
      }
      throw new Error(`the service never hung up the ${spec.carrier} call of ${callId}`);
    },
    inbound: {
      number: spec.number,
      async call(serviceUrl, script) {
        const { caller, callId } = await spec.placeInboundCall(running(), serviceUrl, spec.number, CALLER);
        void runScript(caller, script).finally(() => caller.hangUp());
        return callId;
      },
      badlySigned: (serviceUrl) => spec.badlySigned(running(), serviceUrl, spec.number, CALLER),
    },
    streamWithoutSecret: (serviceUrl, callId) => spec.streamWithoutSecret(running(), serviceUrl, callId),
    ...(joined ? { warmTransfer: { joined: (callId: string) => joined(running(), callId) } } : {}),
  };
}

/** Opens a Twilio-protocol media stream (in `dialect`) at `path` naming `callId` but no secret: its close code. */
export async function twilioStreamWithoutSecret(
  serviceUrl: string,
  path: string,
  callId: string,
  dialect?: StreamDialect,
): Promise<number> {
  const stream = new TwilioStreamCaller({
    url: `${serviceUrl.replace('http', 'ws')}${path}`,
    customParameters: { call_id: callId },
    ...(dialect ? { dialect } : {}),
  });
  await stream.connect();
  await stream.waitForClose();
  return stream.closeCode ?? 0;
}
