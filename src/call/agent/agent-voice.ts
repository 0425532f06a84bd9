// What the agent is saying: utterances played one after another, each synthesized piece by piece
// straight into the outbound pacer and bracketed by marks the far side echoes once it has played
// them, so the call knows which words the caller actually heard.
import type { AgentConfig } from '../../agents/schema.ts';
import { dtmfTones } from '../../audio/dtmf.ts';
import { Framer } from '../../audio/framer.ts';
import { INTERNAL_SAMPLE_RATE } from '../../audio/pcm.ts';
import { spokenTextFor } from '../../speech/tts/spoken-text.ts';
import type { TtsEngine } from '../../speech/types.ts';
import type { Timers } from '../../timers.ts';
import type { CallClock } from '../call-clock.ts';
import type { CallTransport } from '../transport.ts';
import { OutboundPacer, type PacerListener, type PacerWakeups } from './pacer.ts';
import { Utterance, utteranceMark } from './utterance.ts';

export interface AgentVoiceEvents {
  /** A new utterance was queued: the agent takes the floor. */
  queued(u: Utterance): void;
  /** The far side began playing `u`. */
  started(u: Utterance, at: number): void;
  /**
   * `u` was heard in full, or interrupted (its text is then what was heard). `from`: when the words
   * heard began playing (wall ms); `at`: when it ended.
   */
  ended(u: Utterance, from: number, at: number): void;
  /** Everything queued has been heard. */
  drained(): void;
  /** A frame went out to the far side. */
  frameSent(frame: Int16Array): void;
  /** A synthesis gave its first audio, `ms` after it was asked for. */
  firstAudio(ms: number): void;
  failed(error: unknown): void;
}

export interface UtteranceOptions {
  /** Whether the caller's barge-in may cut it; true unless said otherwise. */
  interruptible?: boolean;
}

export interface AgentVoiceOptions {
  transport: CallTransport;
  /** Rate of the frames out: the line's. */
  rate: number;
  tts: TtsEngine;
  voiceId: string;
  speed: number;
  /**
   * Each piece's text as the voice should say it (numbers, dates, an agent's pronunciations); as written when absent.
   */
  spoken?: ((text: string) => string) | undefined;
  timers: Timers;
  clock: CallClock;
  /** Shared by the calls on this event loop, so the inbound path can send frames that fell due. */
  pacerWakeups?: PacerWakeups | undefined;
  /** The reply under way, if any: aborting it stops the synthesis it started. */
  replySignal(): AbortSignal | undefined;
  recording?:
    { agentAudio(frame: Int16Array, offsetMs: number): void; agentCleared(offsetMs: number): void } | undefined;
  events: AgentVoiceEvents;
}

export class AgentVoice {
  private readonly pacer: OutboundPacer;
  /** Queued and playing, oldest first. */
  private readonly pending: Utterance[] = [];
  private open: Utterance | null = null;
  private seq = 0;
  /** All audio of every utterance begun so far is queued: a new one's audio follows it, never interleaves. */
  private lastQueued: Promise<void> = Promise.resolve();
  private stopped = false;
  /** Utterances a speech-to-speech model streams its audio into, with their framer and their one piece. */
  private readonly streams = new WeakMap<Utterance, { framer: Framer; piece: { text: string; audioMs: number } }>();

  constructor(private readonly o: AgentVoiceOptions) {
    const voice = this;
    const listener: PacerListener = {
      sent(frame, playAt) {
        voice.onFrameSent(frame, playAt);
      },
      drained() {},
    };
    this.pacer = new OutboundPacer(o.transport, o.timers, listener, { wakeups: o.pacerWakeups });
  }

  /** Something is queued or playing. */
  get busy(): boolean {
    return this.pending.length > 0;
  }

  /** The utterance still taking text (a reply being spoken as it streams), if any. */
  get openUtterance(): Utterance | null {
    return this.open;
  }

  /** Barge-in may cut what is queued or playing: every utterance of it is interruptible. */
  get interruptible(): boolean {
    return this.pending.every((u) => u.interruptible);
  }

  /** Queues a new utterance, which takes text until it is closed. */
  begin(options: UtteranceOptions = {}): Utterance {
    const u = new Utterance(++this.seq, this.lastQueued, options.interruptible ?? true);
    this.lastQueued = u.allQueued;
    this.pending.push(u);
    this.open = u;
    this.o.events.queued(u);
    return u;
  }

  /** Synthesizes one more piece of `u`'s text after the pieces before it, straight into the pacer. */
  say(u: Utterance, text: string): void {
    u.text = u.text ? `${u.text} ${text}` : text;
    u.synthesis = u.synthesis.then(() => this.synthesize(u, text));
  }

  /** No more text for `u`: its end is marked once its audio is queued. */
  close(u: Utterance): void {
    if (u.closed) return;
    u.closed = true;
    if (this.open === u) this.open = null;
    const stream = this.streams.get(u);
    if (stream)
      u.synthesis = u.synthesis.then(() => {
        const last = stream.framer.flush();
        if (last && !u.interrupted && !this.stopped) this.queueFrame(u, last);
      });
    void u.synthesis.then(() => {
      u.audioQueued();
      if (u.interrupted) return;
      if (u.framesQueued === 0) {
        this.finish(u, this.o.timers.now());
        return;
      }
      this.pacer.enqueueMark(utteranceMark.end(u.id));
    });
  }

  /**
   * A speech-to-speech model's audio for `u`, at the line's rate, played after what `u` queued before; its words come
   * apart (streamWords), and the words heard of it are estimated from the audio each piece of text came with.
   */
  streamAudio(u: Utterance, samples: Int16Array): void {
    const stream = this.streamOf(u);
    u.synthesis = u.synthesis.then(() => {
      if (u.interrupted || this.stopped) return;
      for (const frame of stream.framer.push(samples)) this.queueFrame(u, frame);
      stream.piece.audioMs += (samples.length / this.o.rate) * 1000;
    });
  }

  /** The words a speech-to-speech model says in `u`, as its transcript streams (deltas keep their own spaces). */
  streamWords(u: Utterance, delta: string): void {
    const stream = this.streamOf(u);
    stream.piece.text += delta;
    u.text = stream.piece.text.trim();
  }

  private streamOf(u: Utterance): { framer: Framer; piece: { text: string; audioMs: number } } {
    let stream = this.streams.get(u);
    if (!stream) {
      stream = { framer: Framer.forRate(this.o.rate), piece: { text: '', audioMs: 0 } };
      this.streams.set(u, stream);
      u.pieces.push(stream.piece);
    }
    return stream;
  }

  /** Words said in one go (greeting, reminder, apology). */
  sayAll(text: string, options: UtteranceOptions = {}): Utterance {
    const u = this.begin(options);
    this.say(u, text);
    this.close(u);
    return u;
  }

  /**
   * Keypad tones of `keys` (DTMF, in-band: any line carries them), after everything queued. An
   * utterance without words: the transcript keeps none, barge-in cuts it like speech.
   */
  pressKeys(keys: string): Utterance {
    return this.play(dtmfTones(keys, this.o.rate));
  }

  /** Audio without words at the line's rate (keypad tones, hold music), after everything queued. */
  play(samples: Int16Array, options: UtteranceOptions = {}): Utterance {
    const u = this.begin(options);
    u.synthesis = u.synthesis.then(() => {
      if (u.interrupted || this.stopped) return;
      const framer = Framer.forRate(this.o.rate);
      for (const frame of framer.push(samples)) this.queueFrame(u, frame);
      const last = framer.flush();
      if (last) this.queueFrame(u, last);
      u.pieces.push({ text: '', audioMs: (samples.length / this.o.rate) * 1000 });
    });
    this.close(u);
    return u;
  }

  /**
   * Barge-in: cuts everything queued or playing at the words heard, and the far side drops what it
   * buffered; returns what was cut, oldest first. Nothing is cut while an utterance that may not be
   * interrupted is queued, unless `force` (the flow that said it is over).
   */
  interrupt(options: { force?: boolean } = {}): Utterance[] {
    if (!options.force && !this.interruptible) return [];
    const now = this.o.timers.now();
    const cut = this.cutAll(now);
    this.open = null;
    this.pacer.clear();
    this.o.recording?.agentCleared(this.o.clock.sinceStart(now));
    return cut;
  }

  /** The call is over: what was still to play is cut where playback stood. */
  stop(): void {
    this.stopped = true;
    this.cutAll(this.o.timers.now());
    this.pacer.stop();
  }

  /** Resolves once everything queued has played, or after `timeoutMs`. */
  finished(timeoutMs: number): Promise<void> {
    if (this.pending.length === 0) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = this.o.timers.setTimeout(resolve, timeoutMs);
      void Promise.all(this.pending.map((u) => u.done)).then(() => {
        this.o.timers.clearTimeout(timer);
        resolve();
      });
    });
  }

  /** The far side played everything up to this mark. */
  mark(name: string): void {
    const mark = utteranceMark.parse(name);
    if (!mark || this.stopped) return;
    const u = this.pending.find((p) => p.id === mark.id);
    if (!u || u.interrupted) return;
    const now = this.o.timers.now();
    if (mark.edge === 'end') {
      this.finish(u, now);
      return;
    }
    if (u.startedAt !== null) return;
    u.playing(now);
    this.o.events.started(u, now);
  }

  private async synthesize(u: Utterance, text: string): Promise<void> {
    if (u.interrupted || this.stopped) return;
    const signal = this.o.replySignal();
    const requested = this.o.timers.now();
    let first = true;
    let samples = 0;
    const framer = Framer.forRate(this.o.rate);
    try {
      for await (const chunk of this.o.tts.synthesize(this.o.spoken ? this.o.spoken(text) : text, {
        sampleRate: this.o.rate,
        voiceId: this.o.voiceId,
        speed: this.o.speed,
        // The first piece of an utterance follows a pause: its silent lead-in would only delay the voice.
        trimLeadIn: u.pieces.length === 0,
        ...(signal ? { signal } : {}),
      })) {
        if (u.interrupted || this.stopped) return;
        if (first) {
          this.o.events.firstAudio(this.o.timers.now() - requested);
          first = false;
        }
        samples += chunk.samples.length;
        for (const frame of framer.push(chunk.samples)) this.queueFrame(u, frame);
      }
      const last = framer.flush();
      if (last && !u.interrupted) this.queueFrame(u, last);
    } catch (error) {
      if (u.interrupted || signal?.aborted || this.stopped) return;
      this.o.events.failed(error);
      return;
    }
    u.pieces.push({ text, audioMs: (samples / this.o.rate) * 1000 });
  }

  /** The first frame of an utterance is preceded by its start mark. */
  private queueFrame(u: Utterance, frame: Int16Array): void {
    if (u.framesQueued === 0) this.pacer.enqueueMark(utteranceMark.start(u.id));
    u.framesQueued++;
    this.pacer.enqueue(frame);
  }

  private onFrameSent(frame: Int16Array, playAt: number): void {
    this.o.recording?.agentAudio(frame, this.o.clock.sinceStart(playAt));
    const u = this.pending[0];
    if (u && u.estimatedStart === null) u.estimatedStart = playAt;
    this.o.events.frameSent(frame);
  }

  private finish(u: Utterance, now: number): void {
    const index = this.pending.indexOf(u);
    if (index !== -1) this.pending.splice(index, 1);
    u.heard();
    this.o.events.ended(u, now, now);
    if (this.pending.length === 0) this.o.events.drained();
  }

  private cutAll(now: number): Utterance[] {
    const cut = this.pending.splice(0);
    for (const u of cut) {
      const from = u.interrupt(now);
      this.o.events.ended(u, from ?? now, now);
    }
    return cut;
  }
}

/** What every voice of one call shares: the agent's voice settings, the engine, the clocks. */
export interface CallVoiceSettings {
  tts: TtsEngine;
  voice: AgentConfig['voice'];
  timers: Timers;
  clock: CallClock;
  pacerWakeups?: PacerWakeups | undefined;
}

/** The agent's voice on `line` (the caller's, or a transfer's second leg) at the line's rate. */
export function agentVoiceOn(
  line: CallTransport,
  settings: CallVoiceSettings,
  events: AgentVoiceEvents,
  replySignal: () => AbortSignal | undefined,
  recording?: AgentVoiceOptions['recording'],
): AgentVoice {
  return new AgentVoice({
    transport: line,
    rate: line.sampleRate ?? INTERNAL_SAMPLE_RATE,
    tts: settings.tts,
    voiceId: settings.voice.voice_id,
    speed: settings.voice.speed,
    spoken: spokenTextFor(settings.voice),
    timers: settings.timers,
    clock: settings.clock,
    pacerWakeups: settings.pacerWakeups,
    replySignal,
    recording,
    events,
  });
}

/** Events of a voice whose words are nobody's record (a warm transfer's second leg): only a failure is told. */
export function unheardVoiceEvents(failed: (error: unknown) => void): AgentVoiceEvents {
  const noop = (): void => undefined;
  return { queued: noop, started: noop, ended: noop, drained: noop, frameSent: noop, firstAudio: noop, failed };
}
