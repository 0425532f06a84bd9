// Twilio under the carrier conformance suite, through the REST stand-in (test/helpers/twilio-standin.ts):
// its answering phones and inbound callers run the suite's scripts on the media stream, as a
// simulated phone runs them on the same protocol.
import { randomBytes } from 'node:crypto';
import pino from 'pino';
import { SimCallee } from '../../../src/carriers/sim/callee.ts';
import { loadSimScript, type SimScript } from '../../../src/carriers/sim/script.ts';
import { TwilioStreamCaller } from '../../../src/carriers/sim/twilio-stream.ts';
import { placeInboundCall, voiceWebhook } from '../../helpers/phone.ts';
import { TwilioStandIn } from '../../helpers/twilio-standin.ts';
import { SCRIPTS, type CarrierDriver, type ScriptName } from '../conformance.ts';

const PHONES = Object.fromEntries(
  Object.keys(SCRIPTS).map((name, i) => [name, `+1415555${String(8100 + i)}`]),
) as Record<ScriptName, string>;
const log = pino({ level: 'silent' });
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

let twilio: TwilioStandIn;
const scripts = new Map<ScriptName, SimScript>();

/**
 * Runs `script` on a stream the way a simulated phone does, then stays on until the line closes (at
 * most the script's max_ms). Called as soon as the stream is open: the callee must hear the greeting from its start.
 */
async function runScript(line: TwilioStreamCaller, script: ScriptName): Promise<void> {
  const loaded = scripts.get(script)!;
  await new SimCallee({ caller: line, script: loaded, random: () => 0.5, log }).run();
  if (!line.closed && loaded.steps.at(-1)?.kind !== 'hangup')
    await Promise.race([line.waitForClose(), sleep(loaded.maxMs)]);
}

export const twilioDriver: CarrierDriver = {
  carrier: 'twilio',
  busy: '+14155558201',
  noAnswer: '+14155558202',
  desk: '+14155558203',
  async start(scriptsDir) {
    for (const name of Object.keys(SCRIPTS) as ScriptName[]) scripts.set(name, await loadSimScript(scriptsDir, name));
    twilio = await new TwilioStandIn().start();
    for (const [script, number] of Object.entries(PHONES))
      twilio.behaviors.set(number, { kind: 'answer', talk: (line) => runScript(line, script as ScriptName) });
    twilio.behaviors.set(this.busy, { kind: 'busy' });
    twilio.behaviors.set(this.noAnswer, { kind: 'no-answer' });
    twilio.behaviors.set(this.desk, { kind: 'answer' });
  },
  async close() {
    await twilio?.close();
  },
  env: () => ({
    TWILIO_ACCOUNT_SID: twilio.accountSid,
    TWILIO_AUTH_TOKEN: twilio.authToken,
    TWILIO_API_BASE: twilio.url,
  }),
  answering: (script) => PHONES[script],
  async hungUpByService(callId) {
    for (let i = 0; i < 100; i++) {
      const placed = twilio.calls.find((c) => String(c.form.StatusCallback).includes(`call_id=${callId}`));
      if (placed && twilio.hangups.includes(placed.sid)) return;
      await sleep(50);
    }
    throw new Error(`the service never hung up the Twilio call of ${callId}`);
  },
  inbound: {
    number: '+14155558200',
    async call(serviceUrl, script) {
      const { caller, callId } = await placeInboundCall(serviceUrl, twilioDriver.inbound!.number, '+14155550100', {
        authToken: twilio.authToken,
      });
      void runScript(caller, script).finally(() => caller.hangUp());
      return callId;
    },
    badlySigned: (serviceUrl) =>
      voiceWebhook(
        serviceUrl,
        { CallSid: `CA${randomBytes(16).toString('hex')}`, From: '+14155550100', To: twilioDriver.inbound!.number },
        'not-the-auth-token',
      ),
  },
  async streamWithoutSecret(serviceUrl, callId) {
    const stream = new TwilioStreamCaller({
      url: `${serviceUrl.replace('http', 'ws')}/media/twilio`,
      customParameters: { call_id: callId },
    });
    await stream.connect();
    await stream.waitForClose();
    return stream.closeCode ?? 0;
  },
};
