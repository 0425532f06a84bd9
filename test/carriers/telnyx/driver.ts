// Telnyx under the carrier conformance suite, through its stand-in (test/helpers/telnyx-standin.ts):
// an organization's own Telnyx account holds the suite's inbound number (calls go out from it too),
// its answering phones and inbound callers run the suite's scripts on Telnyx's media stream, whose
// frames arrive in swapped pairs.
import pino from 'pino';
import { SimCallee } from '../../../src/carriers/sim/callee.ts';
import { loadSimScript, type SimScript } from '../../../src/carriers/sim/script.ts';
import { TwilioStreamCaller } from '../../../src/carriers/sim/twilio-stream.ts';
import { TELNYX_DIALECT, TelnyxStandIn } from '../../helpers/telnyx-standin.ts';
import { SCRIPTS, type CarrierDriver, type ScriptName } from '../conformance.ts';

const PHONES = Object.fromEntries(
  Object.keys(SCRIPTS).map((name, i) => [name, `+1415555${String(9100 + i)}`]),
) as Record<ScriptName, string>;
const NUMBER = '+14155559200';
const log = pino({ level: 'silent' });
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

let telnyx: TelnyxStandIn;
const scripts = new Map<ScriptName, SimScript>();

/** Runs `script` on a stream as a simulated phone does, then stays on until the line closes (at most max_ms). */
async function runScript(line: TwilioStreamCaller, script: ScriptName): Promise<void> {
  const loaded = scripts.get(script)!;
  await new SimCallee({ caller: line, script: loaded, random: () => 0.5, log }).run();
  if (!line.closed && loaded.steps.at(-1)?.kind !== 'hangup')
    await Promise.race([line.waitForClose(), sleep(loaded.maxMs)]);
}

export const telnyxDriver: CarrierDriver = {
  carrier: 'telnyx',
  busy: '+14155559201',
  noAnswer: '+14155559202',
  desk: '+14155559203',
  from: NUMBER,
  async start(scriptsDir) {
    for (const name of Object.keys(SCRIPTS) as ScriptName[]) scripts.set(name, await loadSimScript(scriptsDir, name));
    telnyx = await new TelnyxStandIn().start();
    for (const [script, number] of Object.entries(PHONES))
      telnyx.behaviors.set(number, { kind: 'answer', talk: (line) => runScript(line, script as ScriptName) });
    telnyx.behaviors.set(this.busy, { kind: 'busy' });
    telnyx.behaviors.set(this.noAnswer, { kind: 'no-answer' });
    telnyx.behaviors.set(this.desk, { kind: 'answer' });
  },
  async close() {
    await telnyx?.close();
  },
  env: () => ({ TELNYX_API_BASE: telnyx.url }),
  async setUp(t) {
    const res = await t.request('POST', '/v2/carrier-accounts', {
      body: {
        carrier: 'telnyx',
        name: 'conformance',
        numbers: [NUMBER],
        credentials: { api_key: telnyx.apiKey, public_key: telnyx.publicKey, connection_id: telnyx.connectionId },
      },
    });
    if (res.status !== 201) throw new Error(`the Telnyx account was not created: ${res.status} ${res.text}`);
  },
  answering: (script) => PHONES[script],
  async hungUpByService(callId) {
    for (let i = 0; i < 100; i++) {
      const placed = telnyx.calls.find((c) => c.callId === callId);
      if (placed && telnyx.hangups.includes(placed.callSid)) return;
      await sleep(50);
    }
    throw new Error(`the service never hung up the Telnyx call of ${callId}`);
  },
  inbound: {
    number: NUMBER,
    async call(serviceUrl, script) {
      const { caller, callId } = await telnyx.placeInboundCall(serviceUrl, NUMBER, '+14155550100');
      void runScript(caller, script).finally(() => caller.hangUp());
      return callId;
    },
    badlySigned: (serviceUrl) => telnyx.badlySignedVoiceWebhook(serviceUrl, NUMBER, '+14155550100'),
  },
  async streamWithoutSecret(serviceUrl, callId) {
    const stream = new TwilioStreamCaller({
      url: `${serviceUrl.replace('http', 'ws')}/media/telnyx`,
      customParameters: { call_id: callId },
      dialect: TELNYX_DIALECT,
    });
    await stream.connect();
    await stream.waitForClose();
    return stream.closeCode ?? 0;
  },
};
