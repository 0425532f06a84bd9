// SignalWire under the carrier conformance suite, through its stand-in (test/helpers/signalwire-standin.ts,
// Twilio's with SignalWire's profile): an organization's own SignalWire account holds the suite's
// inbound number (calls go out from it too), and its answering phones and inbound callers run the
// suite's scripts on a wideband stream (L16 16 kHz, as the service's <Stream codec> asks).
import pino from 'pino';
import { SimCallee } from '../../../src/carriers/sim/callee.ts';
import { loadSimScript, type SimScript } from '../../../src/carriers/sim/script.ts';
import { TwilioStreamCaller } from '../../../src/carriers/sim/twilio-stream.ts';
import { SignalWireStandIn } from '../../helpers/signalwire-standin.ts';
import { SCRIPTS, type CarrierDriver, type ScriptName } from '../conformance.ts';

const PHONES = Object.fromEntries(
  Object.keys(SCRIPTS).map((name, i) => [name, `+1415555${String(7100 + i)}`]),
) as Record<ScriptName, string>;
const NUMBER = '+14155557200';
const log = pino({ level: 'silent' });
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

let signalwire: SignalWireStandIn;
const scripts = new Map<ScriptName, SimScript>();

/** Runs `script` on a stream as a simulated phone does, then stays on until the line closes (at most max_ms). */
async function runScript(line: TwilioStreamCaller, script: ScriptName): Promise<void> {
  const loaded = scripts.get(script)!;
  await new SimCallee({ caller: line, script: loaded, random: () => 0.5, log }).run();
  if (!line.closed && loaded.steps.at(-1)?.kind !== 'hangup')
    await Promise.race([line.waitForClose(), sleep(loaded.maxMs)]);
}

export const signalwireDriver: CarrierDriver = {
  carrier: 'signalwire',
  sharesCallCodeWith: 'twilio',
  busy: '+14155557201',
  noAnswer: '+14155557202',
  desk: '+14155557203',
  from: NUMBER,
  async start(scriptsDir) {
    for (const name of Object.keys(SCRIPTS) as ScriptName[]) scripts.set(name, await loadSimScript(scriptsDir, name));
    signalwire = await new SignalWireStandIn().start();
    for (const [script, number] of Object.entries(PHONES))
      signalwire.behaviors.set(number, { kind: 'answer', talk: (line) => runScript(line, script as ScriptName) });
    signalwire.behaviors.set(this.busy, { kind: 'busy' });
    signalwire.behaviors.set(this.noAnswer, { kind: 'no-answer' });
    signalwire.behaviors.set(this.desk, { kind: 'answer' });
  },
  async close() {
    await signalwire?.close();
  },
  env: () => ({ SIGNALWIRE_API_BASE: signalwire.url }),
  async setUp(t) {
    const res = await t.request('POST', '/v2/carrier-accounts', {
      body: { carrier: 'signalwire', name: 'conformance', numbers: [NUMBER], credentials: signalwire.credentials() },
    });
    if (res.status !== 201) throw new Error(`the SignalWire account was not created: ${res.status} ${res.text}`);
  },
  answering: (script) => PHONES[script],
  async hungUpByService(callId) {
    for (let i = 0; i < 100; i++) {
      const placed = signalwire.calls.find((c) => String(c.form.StatusCallback).includes(`call_id=${callId}`));
      if (placed && signalwire.hangups.includes(placed.sid)) return;
      await sleep(50);
    }
    throw new Error(`the service never hung up the SignalWire call of ${callId}`);
  },
  inbound: {
    number: NUMBER,
    async call(serviceUrl, script) {
      const { caller, callId } = await signalwire.placeInboundCall(serviceUrl, NUMBER, '+14155550100');
      void runScript(caller, script).finally(() => caller.hangUp());
      return callId;
    },
    badlySigned: (serviceUrl) => signalwire.badlySignedVoiceWebhook(serviceUrl, NUMBER, '+14155550100'),
  },
  async streamWithoutSecret(serviceUrl, callId) {
    const stream = new TwilioStreamCaller({
      url: `${serviceUrl.replace('http', 'ws')}/media/signalwire`,
      customParameters: { call_id: callId },
    });
    await stream.connect();
    await stream.waitForClose();
    return stream.closeCode ?? 0;
  },
};
