import { describe, expect, it } from 'vitest';
import { AgentVoice, singleVoice } from '../../../src/call/agent/agent-voice.ts';
import type { VoiceChoice } from '../../../src/call/provider-chains.ts';
import { ProviderChain } from '../../../src/call/providers.ts';
import { carriesVoice } from '../../../src/audio/lead-in.ts';
import type { Utterance } from '../../../src/call/agent/utterance.ts';
import { CallClock } from '../../../src/call/call-clock.ts';
import type { VoiceConfig } from '../../../src/speech/tts/index.ts';
import type { PcmChunk, TtsEngine, TtsSynthesisOptions } from '../../../src/speech/types.ts';
import { ManualTimers } from '../../../src/timers.ts';
import { FakeTransport, WordTts, settle } from '../../helpers/session-fakes.ts';

const T0 = 1_700_000_000_000;

function setup(
  options: {
    tts?: TtsEngine;
    signal?: () => AbortSignal | undefined;
    voice?: Partial<VoiceConfig>;
    /** The voices in order, when more than one. */
    voices?: ProviderChain<VoiceChoice>;
  } = {},
) {
  const timers = new ManualTimers(T0);
  const clock = new CallClock(timers);
  clock.connect();
  const transport = new FakeTransport(timers, 8000);
  const tts = options.tts ?? new WordTts();
  const log: string[] = [];
  const recording = { frames: [] as number[], cleared: [] as number[], audio: [] as Int16Array[] };
  const voice = new AgentVoice({
    transport,
    rate: 8000,
    // The words as written unless a test asks for the spoken form.
    voices:
      options.voices ??
      singleVoice({ engine: 'flite', voice_id: 'slt', speed: 1, normalize_for_speech: false, ...options.voice }, tts),
    timers,
    clock,
    replySignal: options.signal ?? (() => undefined),
    recording: {
      agentAudio: (frame, ms) => {
        recording.frames.push(ms);
        recording.audio.push(frame.slice());
      },
      agentCleared: (ms) => recording.cleared.push(ms),
    },
    events: {
      queued: (u) => log.push(`queued ${u.id}`),
      started: (u, at) => log.push(`started ${u.id} @${at - T0}`),
      ended: (u: Utterance, from, at) => log.push(`ended ${u.id} ${u.state} "${u.text}" ${from - T0}-${at - T0}`),
      drained: () => log.push('drained'),
      frameSent: () => undefined,
      firstAudio: () => undefined,
      failed: (error) => log.push(`failed ${(error as Error).message}`),
    },
  });
  transport.attach({
    audio: () => undefined,
    mark: (name) => voice.mark(name),
    dtmf: () => undefined,
    hangup: () => undefined,
  });
  const wait = async (ms: number) => {
    await settle();
    for (let t = 0; t < ms; t += 20) {
      timers.advance(20);
      await settle();
    }
  };
  return { timers, transport, voice, log, recording, wait };
}

describe('AgentVoice', () => {
  it('barge-in cuts nothing while an utterance that may not be interrupted is queued; the flow that said it cuts it with force', async () => {
    const s = setup();
    const hold = s.voice.play(new Int16Array(8000), { interruptible: false });
    expect(hold.interruptible).toBe(false);
    expect(s.voice.interruptible).toBe(false);
    await s.wait(200);
    expect(s.voice.interrupt()).toEqual([]);
    expect(s.voice.busy).toBe(true);
    const cut = s.voice.interrupt({ force: true });
    expect(cut).toEqual([hold]);
    expect(await hold.done).toBe(false);
    expect(s.voice.busy).toBe(false);
    const words = s.voice.sayAll('Hello there.');
    expect(words.interruptible).toBe(true);
    expect(s.voice.interruptible).toBe(true);
    expect(s.voice.interrupt()).toEqual([words]);
  });

  it('plays an utterance queued → speaking → heard by the marks the far side echoes, then reports the floor free', async () => {
    const s = setup();
    const u = s.voice.sayAll('Hello there.');
    expect(s.voice.busy).toBe(true);
    await s.wait(400);
    expect(s.log).toEqual(['queued 1', 'started 1 @0', 'ended 1 heard "Hello there." 200-200', 'drained']);
    expect(await u.done).toBe(true);
    expect(s.voice.busy).toBe(false);
    // 2 words × 100 ms at 8 kHz: ten 20 ms frames, recorded where they play.
    expect(s.recording.frames).toEqual([0, 20, 40, 60, 80, 100, 120, 140, 160, 180]);
  });

  it('takes text piece by piece until closed, and plays utterances one after another', async () => {
    const s = setup();
    const first = s.voice.begin();
    s.voice.say(first, 'One two.');
    s.voice.say(first, 'Three.');
    expect(s.voice.openUtterance).toBe(first);
    s.voice.close(first);
    expect(s.voice.openUtterance).toBeNull();
    s.voice.sayAll('Four.');
    await s.wait(800);
    expect(s.log.filter((l) => l.startsWith('ended'))).toEqual([
      'ended 1 heard "One two. Three." 300-300',
      'ended 2 heard "Four." 400-400',
    ]);
  });

  it('never interleaves two utterances: the second waits until the first is closed and all its audio queued', async () => {
    const s = setup();
    const first = s.voice.begin();
    s.voice.say(first, 'One.');
    s.voice.sayAll('Two three.');
    await s.wait(400);
    // The first played its one word; the second has not started while the first may still grow.
    expect(s.log.filter((l) => l.startsWith('started'))).toEqual(['started 1 @0']);
    s.voice.say(first, 'Four.');
    s.voice.close(first);
    await s.wait(600);
    expect(s.log.filter((l) => l.startsWith('ended'))).toEqual([
      'ended 1 heard "One. Four." 500-500',
      'ended 2 heard "Two three." 700-700',
    ]);
  });

  it('on interruption cuts everything queued at the words heard, clears the far side and marks the recording', async () => {
    const s = setup();
    s.voice.sayAll('alpha bravo charm delta eagle');
    s.voice.sayAll('never heard');
    await s.wait(240);
    s.voice.interrupt();
    expect(s.transport.clears).toBe(1);
    expect(s.log.slice(-2)).toEqual([
      'ended 1 interrupted "alpha bravo charm" 0-240',
      'ended 2 interrupted "" 240-240',
    ]);
    expect(s.recording.cleared).toEqual([240]);
    expect(s.voice.busy).toBe(false);
    expect(s.log).not.toContain('drained');
  });

  it('gives the voice the spoken form of each piece while the utterance keeps the words as written', async () => {
    const asked: string[] = [];
    const words = new WordTts();
    const tts: TtsEngine = {
      name: 'recording',
      synthesize(text, o) {
        asked.push(text);
        return words.synthesize(text, o);
      },
      close: async () => undefined,
    };
    const s = setup({
      tts,
      voice: { normalize_for_speech: true, pronunciation: [{ word: 'Acme', replacement: 'ack me' }] },
    });
    const u = s.voice.sayAll('Acme charges $12.50.');
    await s.wait(1_000);
    expect(asked).toEqual(['ack me charges twelve dollars and fifty cents.']);
    expect(u.text).toBe('Acme charges $12.50.');
    expect(s.log.some((l) => l.startsWith('ended 1 heard "Acme charges $12.50."'))).toBe(true);
  });

  it('ends an utterance that produced no audio as soon as it is closed', async () => {
    const silent: TtsEngine = { name: 'silent', async *synthesize() {}, close: async () => undefined };
    const s = setup({ tts: silent });
    s.voice.sayAll('Hi.');
    await settle();
    expect(s.log).toEqual(['queued 1', 'ended 1 heard "Hi." 0-0', 'drained']);
  });

  it('reports a failed synthesis, but not one of an utterance already cut', async () => {
    class FailingTts implements TtsEngine {
      readonly name = 'failing';
      async *synthesize(_text: string, _o: TtsSynthesisOptions): AsyncIterable<PcmChunk> {
        await Promise.resolve();
        throw new Error('voice died');
      }
      async close() {}
    }
    const s = setup({ tts: new FailingTts() });
    s.voice.sayAll('Hello.');
    await settle();
    expect(s.log).toContain('failed voice died');
    const cut = setup({ tts: new FailingTts() });
    cut.voice.sayAll('Hello.');
    cut.voice.interrupt();
    await settle();
    expect(cut.log.some((l) => l.startsWith('failed'))).toBe(false);
  });

  it('synthesizes with the signal of the reply under way when each piece starts, so cancelling the reply stops it', async () => {
    const seen: (AbortSignal | undefined)[] = [];
    const tts: TtsEngine = {
      name: 'spy',
      async *synthesize(_text, o) {
        seen.push(o.signal);
      },
      close: async () => undefined,
    };
    const reply = new AbortController();
    const s = setup({ tts, signal: () => reply.signal });
    s.voice.sayAll('Hi.');
    await settle();
    expect(seen).toEqual([reply.signal]);
  });

  it('waits for the last words to play, or gives up after the timeout', async () => {
    const s = setup();
    s.voice.sayAll('Goodbye and thank you.');
    let done = false;
    void s.voice.finished(15_000).then(() => (done = true));
    await s.wait(300);
    expect(done).toBe(false);
    await s.wait(200);
    expect(done).toBe(true);
    const stuck = setup({
      tts: {
        name: 'never',
        synthesize: () => ({ [Symbol.asyncIterator]: () => ({ next: () => new Promise(() => undefined) }) }),
        close: async () => undefined,
      },
    });
    stuck.voice.sayAll('Goodbye.');
    let gaveUp = false;
    void stuck.voice.finished(1000).then(() => (gaveUp = true));
    await stuck.wait(1020);
    expect(gaveUp).toBe(true);
  });

  it('once stopped cuts what was queued and ignores marks that come later', async () => {
    const s = setup();
    s.voice.sayAll('alpha bravo charm delta');
    await s.wait(100);
    s.voice.stop();
    expect(s.log.at(-1)).toBe('ended 1 interrupted "alpha" 0-100');
    const before = s.log.length;
    s.voice.mark('u1:end');
    expect(s.log).toHaveLength(before);
  });
});

/** 20 ms chunks at 8 kHz: `silentMs` of digital silence, then `voiceMs` of a ±4000 square wave. */
function* leadInThenVoice(silentMs: number, voiceMs: number): Generator<PcmChunk> {
  for (let ms = 0; ms < silentMs; ms += 20) yield { samples: new Int16Array(160), sampleRate: 8000 };
  for (let ms = 0; ms < voiceMs; ms += 20)
    yield { samples: Int16Array.from({ length: 160 }, (_, i) => (i % 2 === 0 ? 4000 : -4000)), sampleRate: 8000 };
}

/** A voice that starts each synthesis with 160 ms of silence before 100 ms of voice. */
class LeadInTts implements TtsEngine {
  readonly name = 'lead-in';
  async *synthesize(): AsyncIterable<PcmChunk> {
    await Promise.resolve();
    yield* leadInThenVoice(160, 100);
  }
  async close() {}
}

/** A streaming voice whose utterance starts with 160 ms of silence (its first chunks) before 100 ms of voice. */
class LeadInStreamingTts implements TtsEngine {
  readonly name = 'lead-in-stream';
  async *synthesize(): AsyncIterable<PcmChunk> {
    throw new Error('a streaming voice of a call speaks through its session');
  }
  openSession() {
    return {
      utterance() {
        return {
          words: null,
          write: () => undefined,
          end: () => undefined,
          cancel: () => undefined,
          async *audio(): AsyncIterable<PcmChunk> {
            for (const chunk of leadInThenVoice(160, 100)) {
              await Promise.resolve();
              yield chunk;
            }
          },
        };
      },
      async close() {},
    };
  }
  async close() {}
}

const voiced = (frame: Int16Array) => carriesVoice(frame, 8000);

describe("AgentVoice and the voices' lead-in", () => {
  it("starts a reply with its voice: a synthesis's leading silence is cut to 10 ms, a later sentence keeps a 100 ms gap", async () => {
    const s = setup({ tts: new LeadInTts() });
    const u = s.voice.begin();
    s.voice.say(u, 'One.');
    s.voice.say(u, 'Two.');
    s.voice.close(u);
    await s.wait(600);
    // First sentence: 10 ms + 100 ms of voice = 880 samples, 6 frames (the last padded); the second
    // keeps 100 ms of its 160 ms lead-in: 1,600 samples, 10 frames. Uncut it would be 13 + 13 frames.
    expect(s.recording.audio).toHaveLength(16);
    expect(voiced(s.recording.audio[0]!)).toBe(true);
    expect(s.recording.audio.slice(6, 11).map(voiced)).toEqual([false, false, false, false, false]);
    expect(voiced(s.recording.audio[11]!)).toBe(true);
  });

  it("starts a streaming voice's reply with its voice when its first chunks are all silence", async () => {
    const s = setup({ voices: singleVoice(voiceConfig('cartesia'), new LeadInStreamingTts()) });
    s.voice.sayAll('Hello.');
    await s.wait(400);
    expect(s.recording.audio).toHaveLength(6);
    expect(voiced(s.recording.audio[0]!)).toBe(true);
  });
});

/** A voice config of `engine` with the defaults, words as written. */
function voiceConfig(engine: VoiceConfig['engine']): VoiceConfig {
  return { engine, voice_id: 'slt', speed: 1, normalize_for_speech: false };
}

/** Voices in order; `moves` collects each move with its reason. */
function chainOf(engines: TtsEngine[], moves: string[]): ProviderChain<VoiceChoice> {
  return new ProviderChain(
    'voice',
    engines.map((engine, i) => ({
      name: engine.name,
      provider: { config: voiceConfig(i === engines.length - 1 ? 'flite' : 'openai'), engine: () => engine },
    })),
    (from, to, reason) => moves.push(`${from}->${to} ${reason}`),
  );
}

/** A voice that cannot be reached: it fails before any audio. */
class RefusedTts implements TtsEngine {
  readonly name = 'refused';
  asked = 0;
  async *synthesize(): AsyncIterable<PcmChunk> {
    this.asked++;
    await Promise.resolve();
    throw new Error('connect ECONNREFUSED');
  }
  async close() {}
}

/** A voice that never answers, until the call gives up on it. */
class MuteTts implements TtsEngine {
  readonly name = 'mute';
  async *synthesize(_text: string, o: TtsSynthesisOptions): AsyncIterable<PcmChunk> {
    await new Promise<void>((resolve) => o.signal?.addEventListener('abort', () => resolve(), { once: true }));
  }
  async close() {}
}

/** A streaming voice (one session per line) whose connection drops after `chunks` of an utterance's audio. */
class DroppingStreamingTts implements TtsEngine {
  readonly name = 'dropping-stream';
  readonly written: string[] = [];
  sessions = 0;
  constructor(private readonly chunks: number) {}
  async *synthesize(): AsyncIterable<PcmChunk> {
    throw new Error('a streaming voice of a call speaks through its session');
  }
  openSession(options: { sampleRate: number }) {
    this.sessions++;
    const engine = this;
    return {
      utterance() {
        let cancelled = false;
        return {
          words: null,
          write: (text: string) => engine.written.push(text),
          end: () => undefined,
          cancel: () => (cancelled = true),
          async *audio(): AsyncIterable<PcmChunk> {
            for (let i = 0; i < engine.chunks && !cancelled; i++) {
              await Promise.resolve();
              yield { samples: new Int16Array(options.sampleRate / 50).fill(800), sampleRate: options.sampleRate };
            }
            throw Object.assign(new Error('the provider closed the connection'), { code: 'TTS_PROVIDER_DISCONNECTED' });
          },
        };
      },
      async close() {},
    };
  }
  async close() {}
}

describe('AgentVoice with fallback voices', () => {
  it('a streaming voice whose connection drops mid-utterance hands the utterance to the next voice, which says it from its start', async () => {
    const moves: string[] = [];
    const streaming = new DroppingStreamingTts(3);
    const next = new WordTts();
    const s = setup({ voices: chainOf([streaming, next], moves) });
    const u = s.voice.begin();
    s.voice.say(u, 'Hello there.');
    s.voice.say(u, 'How can I help?');
    s.voice.close(u);
    await s.wait(2_000);
    expect(streaming.sessions).toBe(1);
    expect(streaming.written).toEqual(['Hello there.', 'How can I help?']);
    expect(moves).toEqual(['0->1 error']);
    expect(next.spoken).toEqual(['Hello there.', 'How can I help?']);
    expect(s.log.filter((l) => l.startsWith('failed'))).toEqual([]);
    s.voice.sayAll('Anything else?');
    await s.wait(1_000);
    expect(next.spoken.at(-1)).toBe('Anything else?');
    expect(streaming.written).toHaveLength(2);
  });

  it('a voice that cannot be reached hands the piece to the next voice, which says it; later pieces stay with the next voice', async () => {
    const moves: string[] = [];
    const refused = new RefusedTts();
    const next = new WordTts();
    const s = setup({ voices: chainOf([refused, next], moves) });
    s.voice.sayAll('Hello there.');
    await s.wait(1_000);
    s.voice.sayAll('Still here.');
    await s.wait(1_000);
    expect(moves).toEqual(['0->1 connect']);
    expect(refused.asked).toBe(1);
    expect(next.spoken).toEqual(['Hello there.', 'Still here.']);
    expect(s.log.filter((l) => l.startsWith('failed'))).toEqual([]);
    expect(s.log.filter((l) => l.startsWith('ended'))).toEqual([
      expect.stringMatching(/^ended 1 heard "Hello there\."/),
      expect.stringMatching(/^ended 2 heard "Still here\."/),
    ]);
  });

  it('a voice with another after it that gives no audio by the first-audio deadline is left for the next', async () => {
    const moves: string[] = [];
    const next = new WordTts();
    const s = setup({ voices: chainOf([new MuteTts(), next], moves) });
    s.voice.sayAll('Hello.');
    await s.wait(1_900);
    expect(next.spoken).toEqual([]);
    await s.wait(200);
    expect(moves).toEqual(['0->1 timeout']);
    expect(next.spoken).toEqual(['Hello.']);
    await s.wait(500);
    expect(s.log.some((l) => l.startsWith('ended 1 heard "Hello."'))).toBe(true);
  });

  it('the last voice failing is the call’s failure, as with one voice', async () => {
    const moves: string[] = [];
    const s = setup({ voices: chainOf([new RefusedTts(), new RefusedTts()], moves) });
    s.voice.sayAll('Hello.');
    await s.wait(100);
    expect(moves).toEqual(['0->1 connect']);
    expect(s.log).toContain('failed connect ECONNREFUSED');
  });
});

describe("AgentVoice with a speech-to-speech model's audio", () => {
  it('plays streamed audio in 20 ms frames with the streamed words as its text, heard in full once its end mark comes back', async () => {
    const s = setup();
    const u = s.voice.begin();
    s.voice.streamWords(u, 'Good');
    s.voice.streamAudio(u, new Int16Array(1000).fill(500));
    s.voice.streamWords(u, ' morning');
    s.voice.streamAudio(u, new Int16Array(1400).fill(500));
    s.voice.close(u);
    await s.wait(600);
    // 2400 samples at 8 kHz: 300 ms, the last frame padded by the framer's flush.
    expect(s.transport.framesSent).toBe(15);
    expect(s.log.filter((l) => l.startsWith('ended'))).toEqual(['ended 1 heard "Good morning" 300-300']);
    expect(await u.done).toBe(true);
  });

  it('cut by barge-in, it keeps the words whose audio played, and tells how much audio played', async () => {
    const s = setup();
    const u = s.voice.begin();
    // Four words over 800 ms of audio, the transcript ahead of the audio as a model sends it.
    s.voice.streamWords(u, 'one two three four');
    s.voice.streamAudio(u, new Int16Array(6400).fill(500));
    await s.wait(300);
    const now = s.timers.now();
    expect(u.playedMs(now)).toBeGreaterThanOrEqual(280);
    expect(u.playedMs(now)).toBeLessThanOrEqual(320);
    s.voice.interrupt();
    expect(u.text).toBe('one two');
    expect(await u.done).toBe(false);
  });
});
