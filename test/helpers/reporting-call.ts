// A live call as the service's registry hands it to a carrier's reports, for tests of the carrier's webhooks: the
// call `callId` lists each report it is given (the registry's other calls are its own).
import { vi } from 'vitest';
import type { ActiveCall, CallRegistry } from '../../src/call/registry.ts';

/** Runs `body` while `callId` is live in `registry` as a call that lists its reports; resolves with them. */
export async function reportsOf(registry: CallRegistry, callId: string, body: () => Promise<void>): Promise<string[]> {
  const reports: string[] = [];
  const call: ActiveCall = {
    callId,
    orgId: 'acme',
    callType: 'inbound',
    requestEnd: (reason) => void reports.push(`end ${reason}`),
    voicemailDetected: () => void reports.push('voicemail'),
    transferAnswered: () => void reports.push('transfer answered'),
    transferFailed: (why) => {
      reports.push(`transfer failed: ${why}`);
      return null;
    },
    returnStream: () => false,
    consultFailed: (why) => void reports.push(`second leg failed: ${why}`),
    carrierEnded: () => void reports.push('carrier ended'),
    say: () => undefined,
    addContext: () => undefined,
    listen: () => () => undefined,
    finished: new Promise(() => undefined),
  };
  const get = registry.get.bind(registry);
  const spy = vi.spyOn(registry, 'get').mockImplementation((id) => (id === callId ? call : get(id)));
  try {
    await body();
  } finally {
    spy.mockRestore();
  }
  return reports;
}
