import { describe, expect, it } from 'vitest';
import type { TurnLatency } from '../../src/records/events.ts';
import { CallLatency, TurnLatencyParts } from '../../src/call/latency.ts';

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

describe('a call’s latency', () => {
  const timing = (requestSentAt: number, firstTokenAt: number, firstChunkAt: number) => ({
    requestSentAt,
    firstTokenAt,
    firstChunkAt,
  });

  it('times voice-to-voice from the caller’s speech end to the first agent frame after it, once per answer', () => {
    let now = 10_540;
    const latency = new CallLatency(() => now);
    latency.answering(1, 10_000);
    expect(latency.audioOut()).toEqual({ turn: 1, e2e: 540 });
    now = 10_560;
    expect(latency.audioOut()).toBeNull();
    expect(latency.summary()?.e2e).toMatchObject({ p50: 540, num: 1 });
  });

  it('takes no voice-to-voice sample for an answer the caller interrupted before it was heard', () => {
    const latency = new CallLatency(() => 10_900);
    latency.answering(1, 10_000);
    latency.answerAbandoned();
    expect(latency.audioOut()).toBeNull();
    expect(latency.summary()).toBeNull();
  });

  it('keeps every stage’s samples for the record: recogniser, model, first speakable chunk, voice, tools', () => {
    const latency = new CallLatency(() => 0);
    latency.recognised(120);
    latency.model(timing(0, 30, 45), 1);
    latency.tts(8);
    latency.tool(200);
    expect(latency.summary()).toMatchObject({
      asr: { p50: 120 },
      llm: { p50: 30 },
      llm_speakable: { p50: 45 },
      tts: { p50: 8 },
      tool: { p50: 200 },
    });
  });

  it('hands an observer each answered turn’s parts, and never a cancelled reply’s model timing as the next one’s', () => {
    const got: TurnLatency[] = [];
    const latency = new CallLatency(
      () => 2500,
      (p) => got.push(p),
    );
    latency.recognised(90);
    latency.answering(1, 1000);
    latency.recognised(110);
    latency.answering(2, 2000); // the caller added to their turn: reply 1 was cancelled
    latency.model(timing(0, 5, 6), 1);
    latency.tts(4);
    latency.audioOut();
    expect(got).toEqual([]);
    latency.model(timing(0, 20, 25), 2);
    expect(got).toEqual([{ turn: 2, at: 2500, e2e: 500, asr: 110, llm: 20, llmSpeakable: 25, tts: 4 }]);
  });
});
