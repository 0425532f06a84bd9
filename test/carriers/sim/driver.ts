// The simulated phones under the carrier conformance suite: SIM_NUMBERS lists one answering phone
// per script, a busy one, one that rings out and the transfer desk. They open Twilio's media route.
import type { CarrierDriver, ScriptName } from '../conformance.ts';
import { SCRIPTS } from '../conformance.ts';
import { twilioStreamWithoutSecret } from '../stand-in-driver.ts';

const PHONES = Object.fromEntries(
  Object.keys(SCRIPTS).map((name, i) => [name, `+1555009${String(i).padStart(4, '0')}`]),
) as Record<ScriptName, string>;

export const simDriver: CarrierDriver = {
  carrier: 'sim',
  busy: '+15550098001',
  noAnswer: '+15550098002',
  desk: '+15550098003',
  async start() {},
  async close() {},
  env() {
    const phones = [
      ...Object.entries(PHONES).map(([script, number]) => `${number}=answer:${script}`),
      `${this.busy}=busy`,
      `${this.noAnswer}=no_answer`,
      `${this.desk}=answer`,
    ];
    return { SIM_NUMBERS: phones.join(','), SIM_ANSWER_DELAY_MS: '200' };
  },
  answering: (script) => PHONES[script],
  streamWithoutSecret: (serviceUrl, callId) => twilioStreamWithoutSecret(serviceUrl, '/media/twilio', callId),
};
