import { describe, expect, it } from 'vitest';
import { CallTeardown } from '../../src/call/teardown.ts';

describe('CallTeardown', () => {
  it('stops every registered part once, in the order they registered, then closes each once', () => {
    const log: string[] = [];
    const teardown = new CallTeardown(() => log.push('failed'));
    const caller = teardown.add({ stop: () => log.push('caller stop'), close: () => log.push('caller close') });
    teardown.add({ stop: () => log.push('keypad stop') });
    teardown.add({ close: () => log.push('voice close') });
    expect(caller).toBeDefined();
    teardown.stop();
    teardown.stop();
    expect(log).toEqual(['caller stop', 'keypad stop']);
    teardown.close();
    teardown.close();
    expect(log).toEqual(['caller stop', 'keypad stop', 'caller close', 'voice close']);
  });

  it('closing a call that was never stopped stops its parts first', () => {
    const log: string[] = [];
    const teardown = new CallTeardown(() => log.push('failed'));
    teardown.add({ stop: () => log.push('stop'), close: () => log.push('close') });
    teardown.close();
    expect(log).toEqual(['stop', 'close']);
  });

  it('a part that throws is reported, and the parts after it still stop', () => {
    const failures: unknown[] = [];
    const stopped: string[] = [];
    const teardown = new CallTeardown((error) => failures.push(error));
    teardown.add({
      stop: () => {
        throw new Error('broken');
      },
    });
    teardown.add({ stop: () => stopped.push('timers') });
    teardown.stop();
    expect(failures).toEqual([new Error('broken')]);
    expect(stopped).toEqual(['timers']);
  });
});
