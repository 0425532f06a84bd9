import { describe, expect, it } from 'vitest';
import { KeypadInput, type KeypadEntry, type KeypadSettings } from '../../../src/call/caller/keypad.ts';
import { ManualTimers } from '../../../src/timers.ts';

function keypad(settings: Partial<KeypadSettings> = {}) {
  const timers = new ManualTimers(1000);
  const entries: KeypadEntry[] = [];
  let began = 0;
  const input = new KeypadInput({ terminator: '#', maxDigits: null, timeoutMs: 2500, ...settings }, timers, {
    began: () => began++,
    entered: (e) => entries.push(e),
  });
  const press = (keys: string, gapMs = 200) => {
    for (const key of keys) {
      input.press(key);
      timers.advance(gapMs);
    }
  };
  return { timers, input, entries, press, began: () => began };
}

describe('KeypadInput', () => {
  it('ends an entry at the terminator, which is not part of it, with the times of the first and last key', () => {
    const k = keypad();
    k.press('1234#');
    expect(k.entries).toEqual([{ digits: '1234', firstAt: 1000, lastAt: 1800 }]);
    expect(k.began()).toBe(1);
  });

  it('ends an entry after timeout_ms without a key, and not before', () => {
    const k = keypad({ timeoutMs: 2500 });
    k.press('42', 300);
    k.timers.advance(2500 - 300 - 1);
    expect(k.entries).toEqual([]);
    k.timers.advance(1);
    expect(k.entries).toEqual([{ digits: '42', firstAt: 1000, lastAt: 1300 }]);
  });

  it('ends an entry once it has max_digits, and the next key starts a new one', () => {
    const k = keypad({ maxDigits: 3 });
    k.press('12345');
    k.timers.advance(2500);
    expect(k.entries.map((e) => e.digits)).toEqual(['123', '45']);
    expect(k.began()).toBe(2);
  });

  it('with no terminator (null) treats # as a digit', () => {
    const k = keypad({ terminator: null });
    k.press('9#');
    k.timers.advance(2500);
    expect(k.entries.map((e) => e.digits)).toEqual(['9#']);
  });

  it('makes a terminator pressed alone an entry of its own; ignores keys a phone cannot send', () => {
    const k = keypad();
    k.press('x#');
    expect(k.entries.map((e) => e.digits)).toEqual(['#']);
  });

  it('drops the keys still gathering when stopped', () => {
    const k = keypad();
    k.press('12');
    k.input.stop();
    k.timers.advance(10_000);
    expect(k.entries).toEqual([]);
  });
});
