import { describe, expect, it } from 'vitest';
import { loadPhrases, ownOverhead, type TurnParts } from '../../bench/harness.ts';

const part = (callId: string, at: number, p: Partial<TurnParts> = {}): TurnParts => ({
  callId,
  turn: 1,
  at,
  e2e: 0,
  asr: 0,
  llm: 0,
  llmSpeakable: 0,
  tts: 0,
  ...p,
});

describe('bench harness: the runtime’s own overhead per turn', () => {
  it('subtracts the hangover and the parts of the service turn of that call whose first audio went out nearest to when the caller heard it', () => {
    const results = [{ callId: 'a', v2v: [210, 230], answeredAt: [10_000, 20_000] }];
    const turns = [
      part('a', 9_990, { asr: 1, llmSpeakable: 4, tts: 2 }),
      part('a', 19_900, { llmSpeakable: 20 }),
      part('a', 20_003, { llmSpeakable: 6 }),
      part('b', 10_000, { llmSpeakable: 100 }),
    ];
    expect(ownOverhead(results, turns, 200)).toEqual([3, 24]);
  });

  it('leaves out a turn with no service turn of its call within the window (never pairs across calls)', () => {
    const results = [{ callId: 'a', v2v: [210], answeredAt: [10_000] }];
    expect(ownOverhead(results, [part('a', 10_300), part('a', 9_000), part('b', 9_999)], 200, 200)).toEqual([]);
  });
});

describe('bench harness: the phrases', () => {
  it('with oneStubTurn, leaves out the phrases whose pauses the stub VAD would end a turn in (next … monday morning … works)', () => {
    const all = loadPhrases();
    const oneTurn = loadPhrases({ oneStubTurn: true });
    expect(all).toHaveLength(24);
    // 03 (a 200 ms pause), 06 (280 ms) and 14 (two of 220-240 ms): media/fixtures/*.8k-ulaw.wav.
    expect(oneTurn).toHaveLength(21);
  });
});
