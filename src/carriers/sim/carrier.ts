// The simulated phones: numbers listed in SIM_NUMBERS are answered, refused or rung out here, and an
// answering phone speaks to the service over Twilio's media stream, as Twilio would; every other
// number goes on to the carriers after it. Off unless SIM_NUMBERS is set.
import { resolve } from 'node:path';
import type { CarrierDefinition } from '../carrier.ts';
import { mediaStreamUrl } from '../twilio/twiml.ts';
import { parseSimNumbers } from './numbers.ts';
import { loadSimScript, type SimScript } from './script.ts';
import { SimDialer } from './sim-dialer.ts';

export const simCarrier: CarrierDefinition = {
  name: 'sim',
  async create({ config, peerUrl, outcomes, registry, logger, next }) {
    if (!config.simNumbers) return undefined;
    const phones = parseSimNumbers(config.simNumbers);
    const scripts = new Map<string, SimScript>();
    for (const phone of phones.values()) {
      if (phone.script && !scripts.has(phone.script))
        scripts.set(phone.script, await loadSimScript(resolve(config.simScriptsDir), phone.script));
    }
    logger.info({ numbers: [...phones.keys()] }, 'simulated phones ready');
    const dialer = new SimDialer({
      phones,
      scripts,
      mediaUrl: () => mediaStreamUrl(peerUrl()),
      outcomes,
      registry,
      ringTimeoutMs: config.ringTimeoutMs,
      answerDelayMs: config.simAnswerDelayMs,
      fallback: next,
      log: logger.child({ component: 'sim-phones' }),
    });
    return { name: 'sim', dialer, close: () => dialer.close() };
  },
};
