import { describe, expect, it } from 'vitest';
import { CallListeners } from '../../src/call/listeners.ts';

describe('call listeners', () => {
  it('mix each caller frame with the agent frame sent at that moment, clipping the sum', () => {
    const listeners = new CallListeners(16000);
    const frames: Int16Array[] = [];
    listeners.add({ notice: () => undefined, audio: (s) => frames.push(s), ended: () => undefined });
    listeners.agent(Int16Array.from([1000, 30000, -30000]));
    listeners.caller(Int16Array.from([500, 10000, -10000]));
    listeners.caller(Int16Array.from([7, 8, 9]));
    expect([...frames[0]!]).toEqual([1500, 32767, -32768]);
    // No agent audio for the second moment: the caller alone.
    expect([...frames[1]!]).toEqual([7, 8, 9]);
  });

  it('give a phone line’s 8 kHz audio at 16 kHz', () => {
    const listeners = new CallListeners(8000);
    let samples = 0;
    listeners.add({ notice: () => undefined, audio: (s) => (samples += s.length), ended: () => undefined });
    for (let i = 0; i < 50; i++) listeners.caller(new Int16Array(160));
    expect(Math.abs(samples - 50 * 320)).toBeLessThanOrEqual(64);
  });

  it('keep at most a second of agent audio waiting when no caller audio paces it', () => {
    const listeners = new CallListeners(16000);
    const frames: Int16Array[] = [];
    listeners.add({ notice: () => undefined, audio: (s) => frames.push(s), ended: () => undefined });
    for (let i = 0; i < 120; i++) listeners.agent(Int16Array.of(i));
    listeners.caller(Int16Array.of(0));
    // The oldest went: the first one mixed is from the last 50.
    expect(frames[0]![0]).toBe(70);
  });

  it('tell every listener the events and the end, then forget them; one that stops hears nothing more', () => {
    const listeners = new CallListeners(16000);
    const a: string[] = [];
    const b: string[] = [];
    listeners.add({ notice: (n) => a.push(n.type), audio: () => undefined, ended: () => a.push('ended') });
    const stopB = listeners.add({
      notice: (n) => b.push(n.type),
      audio: () => undefined,
      ended: () => b.push('ended'),
    });
    listeners.notice({ type: 'agent_speaking' });
    stopB();
    listeners.notice({ type: 'agent_stopped' });
    listeners.end();
    expect(a).toEqual(['agent_speaking', 'agent_stopped', 'ended']);
    expect(b).toEqual(['agent_speaking']);
    expect(listeners.active).toBe(false);
  });
});
