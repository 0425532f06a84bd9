// Plivo under the carrier conformance suite, through its stand-in (test/helpers/plivo-standin.ts):
// an organization's own Plivo account holds the suite's inbound number (calls go out from it too),
// and its answering phones and inbound callers run the suite's scripts on lines whose stream to
// the service is Plivo's, L16 at 16 kHz.
import pino from 'pino';
import WebSocket from 'ws';
import { SimCallee } from '../../../src/carriers/sim/callee.ts';
import { loadSimScript, type SimScript } from '../../../src/carriers/sim/script.ts';
import type { TwilioStreamCaller } from '../../../src/carriers/sim/twilio-stream.ts';
import { PlivoStandIn } from '../../helpers/plivo-standin.ts';
import { SCRIPTS, type CarrierDriver, type ScriptName } from '../conformance.ts';

const PHONES = Object.fromEntries(
  Object.keys(SCRIPTS).map((name, i) => [name, `+1415555${String(9300 + i)}`]),
) as Record<ScriptName, string>;
const NUMBER = '+14155559400';
const log = pino({ level: 'silent' });
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

let plivo: PlivoStandIn;
const scripts = new Map<ScriptName, SimScript>();

/** Runs `script` on a line as a simulated phone does, then stays on until the line closes (at most max_ms). */
async function runScript(phone: TwilioStreamCaller, script: ScriptName): Promise<void> {
  const loaded = scripts.get(script)!;
  await new SimCallee({ caller: phone, script: loaded, random: () => 0.5, log }).run();
  if (!phone.closed && loaded.steps.at(-1)?.kind !== 'hangup')
    await Promise.race([phone.waitForClose(), sleep(loaded.maxMs)]);
}

export const plivoDriver: CarrierDriver = {
  carrier: 'plivo',
  busy: '+14155559401',
  noAnswer: '+14155559402',
  desk: '+14155559403',
  from: NUMBER,
  async start(scriptsDir) {
    for (const name of Object.keys(SCRIPTS) as ScriptName[]) scripts.set(name, await loadSimScript(scriptsDir, name));
    plivo = await new PlivoStandIn().start();
    for (const [script, number] of Object.entries(PHONES))
      plivo.behaviors.set(number, { kind: 'answer', talk: (phone) => runScript(phone, script as ScriptName) });
    plivo.behaviors.set(this.busy, { kind: 'busy' });
    plivo.behaviors.set(this.noAnswer, { kind: 'no-answer' });
    plivo.behaviors.set(this.desk, { kind: 'answer' });
  },
  async close() {
    await plivo?.close();
  },
  env: () => ({ PLIVO_API_BASE: plivo.url }),
  async setUp(t) {
    const res = await t.request('POST', '/v2/carrier-accounts', {
      body: {
        carrier: 'plivo',
        name: 'conformance',
        numbers: [NUMBER],
        credentials: { auth_id: plivo.authId, auth_token: plivo.authToken },
      },
    });
    if (res.status !== 201) throw new Error(`the Plivo account was not created: ${res.status} ${res.text}`);
  },
  answering: (script) => PHONES[script],
  async hungUpByService(callId) {
    for (let i = 0; i < 100; i++) {
      const placed = plivo.calls.find((c) => c.callId === callId);
      if (placed && plivo.hangups.includes(placed.callUuid)) return;
      await sleep(50);
    }
    throw new Error(`the service never hung up the Plivo call of ${callId}`);
  },
  inbound: {
    number: NUMBER,
    async call(serviceUrl, script) {
      const { line, callId } = await plivo.placeInboundCall(serviceUrl, NUMBER, '+14155550100');
      void runScript(line.phone, script).finally(() => line.phone.hangUp());
      return callId;
    },
    badlySigned: (serviceUrl) => plivo.badlySignedVoiceWebhook(serviceUrl, NUMBER, '+14155550100'),
  },
  async streamWithoutSecret(serviceUrl, callId) {
    const socket = new WebSocket(
      `${serviceUrl.replace('http', 'ws')}/media/plivo?call_id=${encodeURIComponent(callId)}`,
    );
    socket.on('open', () =>
      socket.send(
        JSON.stringify({
          event: 'start',
          sequenceNumber: 1,
          start: {
            callId: crypto.randomUUID(),
            streamId: crypto.randomUUID(),
            accountId: plivo.authId,
            tracks: ['inbound'],
            mediaFormat: { encoding: 'audio/x-l16', sampleRate: 16000 },
          },
          extra_headers: '',
        }),
      ),
    );
    return new Promise((resolve) => socket.on('close', (code) => resolve(code)));
  },
};
