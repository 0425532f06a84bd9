import pino from 'pino';
import { describe, expect, it } from 'vitest';
import type { DialRequest, DialResult, Dialer } from '../../src/records/dialer.ts';
import type { CarrierDefinition } from '../../src/carriers/carrier.ts';
import { createCarriers } from '../../src/carriers/carriers.ts';
import { CARRIERS } from '../../src/carriers/registry.ts';
import { loadConfig } from '../../src/config.ts';

const config = loadConfig({ API_KEYS: 'org_a:0123456789abcdef0123456789abcdef', TWILIO_SIGNATURE: 'off' });
const deps = {
  publicUrl: () => 'http://127.0.0.1:1',
  peerUrl: () => 'http://127.0.0.1:1',
  carrierCalls: {
    record: async () => undefined,
    carrierCallId: async () => undefined,
    callIdOf: async () => undefined,
    carrierAccountOf: async () => undefined,
  },
  carrierAccounts: { byNumber: async () => undefined, find: async () => undefined },
  clock: { now: () => 0 },
  logger: pino({ level: 'silent' }),
};
const request = (to: string) => ({ to }) as DialRequest;

/** A carrier that serves the numbers it is given and passes the others on, as the simulated phones do. */
function serving(name: string, numbers: string[], made: string[] = []): CarrierDefinition {
  return {
    name,
    async create({ next }) {
      made.push(name);
      const dialer: Dialer = {
        name,
        showsCallerId: (to) => (numbers.includes(to) ? false : next.showsCallerId(to)),
        dial: async (r): Promise<DialResult> =>
          numbers.includes(r.to) ? { status: 'dialing', carrierCallId: `${name}-1` } : next.dial(r),
      };
      return { name, dialer };
    },
  };
}

describe('carriers from the registry', () => {
  it('each registered carrier is named once, and the simulated phones sit in front of Twilio', () => {
    const names = CARRIERS.map((c) => c.name);
    expect(new Set(names).size).toBe(names.length);
    expect(names.indexOf('sim')).toBeLessThan(names.indexOf('twilio'));
  });

  it('a carrier earlier in the list takes its numbers and hands the rest to the ones after it; past the last, the call fails with a reason', async () => {
    const made: string[] = [];
    const carriers = await createCarriers(config, {
      ...deps,
      registered: [serving('front', ['+1'], made), serving('back', ['+2'], made)],
    });
    expect(made).toEqual(['back', 'front']);
    expect(await carriers.dialer.dial(request('+1'))).toMatchObject({ status: 'dialing', carrierCallId: 'front-1' });
    expect(await carriers.dialer.dial(request('+2'))).toMatchObject({ status: 'dialing', carrierCallId: 'back-1' });
    expect(await carriers.dialer.dial(request('+3'))).toMatchObject({
      status: 'failed',
      reason: 'dial_failed',
      message: expect.stringMatching(/No carrier is configured/),
    });
  });

  it('a carrier that config leaves off is skipped: without SIM_NUMBERS or Twilio credentials no call is placed', async () => {
    const carriers = await createCarriers(config, deps);
    // Twilio's dialer is always there (an organization may bring its own account); a call from a number no
    // account holds goes on past it, and fails with the reason.
    expect(carriers.dialer.name).toBe('twilio');
    expect(carriers.dialer.showsCallerId('+15550002')).toBe(false);
    expect(await carriers.dialer.dial({ ...request('+15550002'), orgId: 'org_a', from: '+15550003' })).toMatchObject({
      status: 'failed',
      message: expect.stringMatching(/No carrier is configured/),
    });
    const withSim = await createCarriers(
      loadConfig({
        API_KEYS: 'org_a:0123456789abcdef0123456789abcdef',
        TWILIO_SIGNATURE: 'off',
        SIM_NUMBERS: '+15550001=busy',
      }),
      deps,
    );
    expect(withSim.dialer.name).toBe('sim');
    expect(await withSim.dialer.dial(request('+15550002'))).toMatchObject({
      status: 'failed',
      message: expect.stringMatching(/No carrier is configured/),
    });
    await withSim.close();
  });
});
