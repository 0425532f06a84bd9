import { describe, expect, it } from 'vitest';
import { Utterance } from '../../../src/call/agent/utterance.ts';

function spoken(text: string, audioMs: number): Utterance {
  const u = new Utterance(1);
  u.text = text;
  u.pieces.push({ text, audioMs });
  return u;
}

describe('Utterance', () => {
  it('goes queued → speaking → heard, and `done` says it was heard in full', async () => {
    const u = spoken('Hello there.', 200);
    expect(u.state).toBe('queued');
    u.playing(1000);
    expect(u.state).toBe('speaking');
    u.heard();
    expect(u.state).toBe('heard');
    expect(await u.done).toBe(true);
  });

  it('once interrupted keeps only the words played by then, measured from when playback began, and the rest as unsaid', async () => {
    // Four words of one length over 400 ms: each takes 100 ms.
    const u = spoken('alpha bravo charm delta', 400);
    u.playing(1000);
    expect(u.interrupt(1250)).toBe(1000);
    expect(u.text).toBe('alpha bravo charm');
    expect(u.unsaid).toBe('delta'); // what it would say if it resumed
    expect(u.state).toBe('interrupted');
    expect(u.closed).toBe(true);
    expect(await u.done).toBe(false);
  });

  it('counts from the pacer’s estimate when the far side never confirmed playback, if that time has come', () => {
    const played = spoken('alpha bravo charm delta', 400);
    played.estimatedStart = 1000;
    expect(played.interrupt(1150)).toBe(1000);
    expect(played.text).toBe('alpha bravo');
    const notYet = spoken('alpha bravo charm delta', 400);
    notYet.estimatedStart = 2000;
    expect(notYet.interrupt(1150)).toBeNull();
    expect(notYet.text).toBe('');
    expect(notYet.unsaid).toBe('alpha bravo charm delta');
  });

  it('estimates the words played piece by piece, each word taking its share of its piece by length', () => {
    const u = new Utterance(1);
    u.pieces.push({ text: 'Hi there', audioMs: 900 }, { text: 'friend', audioMs: 300 });
    expect(u.wordsPlayed(0)).toBe('');
    expect(u.wordsPlayed(1)).toBe('Hi');
    expect(u.wordsPlayed(300)).toBe('Hi');
    expect(u.wordsPlayed(301)).toBe('Hi there');
    expect(u.wordsPlayed(899)).toBe('Hi there');
    expect(u.wordsPlayed(901)).toBe('Hi there friend');
  });
});
