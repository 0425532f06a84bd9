// The barge-in rule with a streaming voice's own word times: the transcript keeps the words whose start
// the caller heard, read from each provider's timing shape as its wire reads it.
import { describe, expect, it } from 'vitest';
import { Utterance, wordsHeard, type VoiceTiming } from '../../../src/call/agent/utterance.ts';
import { CartesiaWire } from '../../../src/speech/tts/cartesia/engine.ts';
import { DeepgramWire } from '../../../src/speech/tts/deepgram/engine.ts';
import { ElevenLabsWire } from '../../../src/speech/tts/elevenlabs/engine.ts';
import type { WireEvent } from '../../../src/speech/tts/streaming/wire.ts';
import type { WordTiming } from '../../../src/speech/types.ts';

const json = (message: object) => Buffer.from(JSON.stringify(message));
const wordsIn = (events: WireEvent[]): WordTiming[] => events.flatMap((e) => (e.type === 'words' ? e.words : []));

function timing(
  pieces: { text: string; spoken?: string }[],
  words: WordTiming[] | null,
  audioMs = 0,
  leadInCutMs = 0,
): VoiceTiming {
  return {
    pieces: pieces.map((p) => ({ text: p.text, spoken: p.spoken ?? p.text })),
    words: () => words,
    audioMs,
    leadInCutMs,
  };
}

describe('words heard, by the voice’s own times', () => {
  it("counts the voice's times from its first sample: a cut lead-in makes each word play that much sooner", () => {
    const words = [
      { word: 'Hello', start: 0.2, end: 0.5 },
      { word: 'there', start: 0.6, end: 0.9 },
    ];
    expect(wordsHeard(timing([{ text: 'Hello there' }], words), 450)).toBe('Hello');
    expect(wordsHeard(timing([{ text: 'Hello there' }], words, 0, 190), 450)).toBe('Hello there');
  });

  it('ElevenLabs: character times relative to each audio message are offset by the audio before it, and a word split across messages is one word', () => {
    const wire = new ElevenLabsWire({ apiKey: 'k' }, 8000);
    wire.text('c1', 'Hello there friend.', true);
    // 400 ms of μ-law at 8 kHz, then 600 ms: "Hello the" | "re friend."
    const first = wire.read(
      json({
        audio: Buffer.alloc(3200).toString('base64'),
        contextId: 'c1',
        alignment: {
          chars: [...'Hello the'],
          charStartTimesMs: [0, 40, 80, 120, 160, 200, 250, 300, 350],
          charDurationsMs: [40, 40, 40, 40, 40, 50, 50, 50, 50],
        },
      }),
      false,
    );
    const second = wire.read(
      json({
        audio: Buffer.alloc(4800).toString('base64'),
        contextId: 'c1',
        alignment: {
          chars: [...'re friend.'],
          charStartTimesMs: [0, 50, 100, 150, 200, 250, 300, 350, 400, 450],
          charDurationsMs: [50, 50, 50, 50, 50, 50, 50, 50, 50, 50],
        },
      }),
      false,
    );
    const final = wire.read(json({ isFinal: true, contextId: 'c1' }), false);
    const words = wordsIn([...first, ...second, ...final]);
    expect(words).toEqual([
      { word: 'Hello', start: 0, end: 0.2 },
      { word: 'there', start: 0.25, end: 0.5 },
      { word: 'friend.', start: 0.55, end: 0.9 },
    ]);
    const said = timing([{ text: 'Hello there friend.' }], words);
    expect(wordsHeard(said, 250)).toBe('Hello');
    expect(wordsHeard(said, 251)).toBe('Hello there');
    expect(wordsHeard(said, 551)).toBe('Hello there friend.');
  });

  it('Cartesia: word timestamps in seconds from the context’s start, as they come', () => {
    const wire = new CartesiaWire({ apiKey: 'k' }, 8000);
    const events = [
      ...wire.read(
        json({
          type: 'timestamps',
          done: false,
          status_code: 206,
          context_id: 'c1',
          word_timestamps: { words: ['Hello', 'world'], start: [0, 0.5], end: [0.4, 0.9] },
        }),
        false,
      ),
      ...wire.read(
        json({
          type: 'timestamps',
          context_id: 'c1',
          word_timestamps: { words: ['again.'], start: [1.1], end: [1.5] },
        }),
        false,
      ),
    ];
    const said = timing([{ text: 'Hello world' }, { text: 'again.' }], wordsIn(events));
    expect(wordsHeard(said, 500)).toBe('Hello');
    expect(wordsHeard(said, 1000)).toBe('Hello world');
    expect(wordsHeard(said, 1101)).toBe('Hello world again.');
  });

  it('Deepgram Aura times no words: the estimate from the utterance’s audio length, each word its share by length', () => {
    const wire = new DeepgramWire({ apiKey: 'k' }, 8000);
    expect(wire.timesWords).toBe(false);
    // Four words of one length over 400 ms: each takes 100 ms.
    const said = timing([{ text: 'alpha bravo' }, { text: 'charm delta' }], null, 400);
    expect(wordsHeard(said, 0)).toBe('');
    expect(wordsHeard(said, 150)).toBe('alpha bravo');
    expect(wordsHeard(said, 301)).toBe('alpha bravo charm delta');
  });

  it('maps spoken words back to written ones: a number said as two words is one written word, heard once its first is', () => {
    const words = [
      { word: 'It', start: 0, end: 0.1 },
      { word: 'costs', start: 0.1, end: 0.3 },
      { word: 'five', start: 0.3, end: 0.5 },
      { word: 'dollars', start: 0.5, end: 0.8 },
      { word: 'today.', start: 0.8, end: 1.2 },
    ];
    const said = timing([{ text: 'It costs $5', spoken: 'It costs five dollars' }, { text: 'today.' }], words);
    expect(wordsHeard(said, 200)).toBe('It costs');
    expect(wordsHeard(said, 400)).toBe('It costs $5');
    expect(wordsHeard(said, 700)).toBe('It costs $5');
    expect(wordsHeard(said, 900)).toBe('It costs $5 today.');
  });

  it('an interrupted utterance spoken by a streaming voice keeps the words heard by its times, the rest unsaid', () => {
    const u = new Utterance(1);
    u.text = 'Hello there friend.';
    u.voiceTiming = timing(
      [{ text: 'Hello there friend.' }],
      [
        { word: 'Hello', start: 0, end: 0.2 },
        { word: 'there', start: 0.6, end: 0.9 },
        { word: 'friend.', start: 1.0, end: 1.4 },
      ],
    );
    u.playing(10_000);
    // 500 ms in: "there" has not started (a length estimate would already have it).
    u.interrupt(10_500);
    expect(u.text).toBe('Hello');
    expect(u.unsaid).toBe('there friend.');
  });
});
