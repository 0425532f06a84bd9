import { describe, expect, it } from 'vitest';
import type { TurnLatency } from '../../src/calls/events.ts';
import { TurnLatencyParts } from '../../src/call/latency.ts';

describe('turn latency parts', () => {
  it('are handed on once both the first audio and the model timing are in, in either order', () => {
    const got: TurnLatency[] = [];
    const late = new TurnLatencyParts(3, 40, (p) => got.push(p));
    late.tts(7);
    late.firstAudio(300, 5000);
    expect(got).toEqual([]);
    late.model(20, 25);
    expect(got).toEqual([{ turn: 3, at: 5000, e2e: 300, asr: 40, llm: 20, llmSpeakable: 25, tts: 7 }]);

    const early = new TurnLatencyParts(4, null, (p) => got.push(p));
    early.model(10, 12);
    early.firstAudio(250, 6000);
    early.firstAudio(999, 7000);
    early.model(1, 1);
    expect(got.slice(1)).toEqual([{ turn: 4, at: 6000, e2e: 250, asr: null, llm: 10, llmSpeakable: 12, tts: null }]);
  });

  it("only the turn's first synthesis counts as its TTS time", () => {
    const got: TurnLatency[] = [];
    const parts = new TurnLatencyParts(1, 0, (p) => got.push(p));
    parts.tts(5);
    parts.tts(50);
    parts.model(1, 2);
    parts.firstAudio(100, 1);
    expect(got[0]?.tts).toBe(5);
  });

  it('a turn whose model gave no speakable chunk (a tool call only) is not handed on', () => {
    const got: TurnLatency[] = [];
    const parts = new TurnLatencyParts(1, 0, (p) => got.push(p));
    parts.model(3, null);
    parts.firstAudio(100, 1);
    expect(got).toEqual([]);
  });
});
