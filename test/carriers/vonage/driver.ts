// Vonage under the carrier conformance suite, through its stand-in (test/helpers/vonage-standin.ts):
// an organization's own Vonage account holds the suite's inbound number (calls go out from it too),
// its answering phones and inbound callers run the suite's scripts, and the stand-in carries their
// audio to the service as Vonage does: binary L16 at 16 kHz on its media WebSocket.
import pino from 'pino';
import WebSocket from 'ws';
import { SimCallee } from '../../../src/carriers/sim/callee.ts';
import { loadSimScript, type SimScript } from '../../../src/carriers/sim/script.ts';
import type { TwilioStreamCaller } from '../../../src/carriers/sim/twilio-stream.ts';
import { VonageStandIn } from '../../helpers/vonage-standin.ts';
import { SCRIPTS, type CarrierDriver, type ScriptName } from '../conformance.ts';

const PHONES = Object.fromEntries(
  Object.keys(SCRIPTS).map((name, i) => [name, `+1415555${String(9500 + i)}`]),
) as Record<ScriptName, string>;
const NUMBER = '+14155559600';
const log = pino({ level: 'silent' });
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

let vonage: VonageStandIn;
const scripts = new Map<ScriptName, SimScript>();

/** Runs `script` on a line as a simulated phone does, then stays on until the line closes (at most max_ms). */
async function runScript(line: TwilioStreamCaller, script: ScriptName): Promise<void> {
  const loaded = scripts.get(script)!;
  await new SimCallee({ caller: line, script: loaded, random: () => 0.5, log }).run();
  if (!line.closed && loaded.steps.at(-1)?.kind !== 'hangup')
    await Promise.race([line.waitForClose(), sleep(loaded.maxMs)]);
}

export const vonageDriver: CarrierDriver = {
  carrier: 'vonage',
  busy: '+14155559601',
  noAnswer: '+14155559602',
  desk: '+14155559603',
  from: NUMBER,
  async start(scriptsDir) {
    for (const name of Object.keys(SCRIPTS) as ScriptName[]) scripts.set(name, await loadSimScript(scriptsDir, name));
    vonage = await new VonageStandIn().start();
    for (const [script, number] of Object.entries(PHONES))
      vonage.behaviors.set(number, { kind: 'answer', talk: (line) => runScript(line, script as ScriptName) });
    vonage.behaviors.set(this.busy, { kind: 'busy' });
    vonage.behaviors.set(this.noAnswer, { kind: 'timeout' });
    vonage.behaviors.set(this.desk, { kind: 'answer' });
  },
  async close() {
    await vonage?.close();
  },
  env: () => ({ VONAGE_API_BASE: vonage.url }),
  async setUp(t) {
    const res = await t.request('POST', '/v2/carrier-accounts', {
      body: {
        carrier: 'vonage',
        name: 'conformance',
        numbers: [NUMBER],
        credentials: {
          application_id: vonage.applicationId,
          private_key: vonage.privateKey,
          signature_secret: vonage.signatureSecret,
        },
      },
    });
    if (res.status !== 201) throw new Error(`the Vonage account was not created: ${res.status} ${res.text}`);
  },
  answering: (script) => PHONES[script],
  async hungUpByService(callId) {
    for (let i = 0; i < 100; i++) {
      const placed = vonage.calls.find((c) => c.callId === callId);
      if (placed && vonage.hangups.includes(placed.uuid)) return;
      await sleep(50);
    }
    throw new Error(`the service never hung up the Vonage call of ${callId}`);
  },
  inbound: {
    number: NUMBER,
    async call(serviceUrl, script) {
      const { caller, callId } = await vonage.placeInboundCall(serviceUrl, NUMBER, '+14155550100');
      void runScript(caller, script).finally(() => caller.hangUp());
      return callId;
    },
    badlySigned: (serviceUrl) =>
      vonage.answer(
        serviceUrl,
        { to: NUMBER, from: '+14155550100', uuid: crypto.randomUUID() },
        'not-the-signature-secret',
      ),
  },
  async streamWithoutSecret(serviceUrl, callId) {
    const socket = new WebSocket(`${serviceUrl.replace('http', 'ws')}/media/vonage`);
    await new Promise<void>((resolve, reject) => {
      socket.once('open', () => resolve());
      socket.once('error', reject);
    });
    const closed = new Promise<number>((resolve) => socket.once('close', (code) => resolve(code)));
    socket.send(
      JSON.stringify({ event: 'websocket:connected', 'content-type': 'audio/l16;rate=16000', call_id: callId }),
    );
    return closed;
  },
};
