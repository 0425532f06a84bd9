// What the agent is saying: utterances played one after another, each synthesized piece by piece
// straight into the outbound pacer and bracketed by marks the far side echoes once it has played
// them, so the call knows which words the caller actually heard.
import type { AgentConfig } from '../../agents/schema.ts';
import { dtmfTones } from '../../audio/dtmf.ts';
import { Framer } from '../../audio/framer.ts';
import { LeadInTrimmer } from '../../audio/lead-in.ts';
import { INTERNAL_SAMPLE_RATE } from '../../audio/pcm.ts';
import { spokenTextFor } from '../../speech/tts/spoken-text.ts';
import type { TtsEngine, TtsSession, TtsUtteranceStream } from '../../speech/types.ts';
import type { Timers } from '../../timers.ts';
import type { CallClock } from '../call-clock.ts';
import type { VoiceChoice } from '../provider-chains.ts';
import { FALLBACK_DEFAULTS, ProviderChain, providerDeadline, type FallbackReason } from '../providers.ts';
import type { CallTransport } from '../transport.ts';
import { OutboundPacer, type PacerListener, type PacerWakeups } from './pacer.ts';
import { Utterance, utteranceMark, type VoiceTiming } from './utterance.ts';

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
  /**
   * The agent's voices in order (provider-chains.ts): the one serving says each piece; when it fails, the next says
   * the piece again and every piece after it.
   */
  voices: ProviderChain<VoiceChoice>;
  /** A voice with another after it that gives no audio this long after being asked has failed (providers.ts). */
  firstAudioDeadlineMs?: number | undefined;
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
  /** Each voice's text for speech (numbers, dates, its pronunciations), made once. */
  private readonly spokenBy = new Map<VoiceChoice, (text: string) => string>();
  /** Each streaming voice's session for this line, opened at its first words (null: the voice has none). */
  private readonly sessions = new Map<VoiceChoice, TtsSession | null>();
  /** Each voice's level as heard so far on this call: its lead-in is measured against it (audio/lead-in.ts). */
  private readonly voiceLevels = new Map<VoiceChoice, number>();
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
    const voice = this.o.voices.current;
    const session = this.voiceSession(voice);
    if (session) {
      this.stream(u, voice, session, text);
      return;
    }
    u.synthesis = u.synthesis.then(() => this.synthesize(u, text));
  }

  /** No more text for `u`: its end is marked once its audio is queued. */
  close(u: Utterance): void {
    if (u.closed) return;
    u.closed = true;
    if (this.open === u) this.open = null;
    u.voice?.end();
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
   * utterance without words: the transcript keeps none. Barge-in does not cut it: a key pressed
   * is pressed, and a phone menu reads on over the tones it listens for.
   */
  pressKeys(keys: string): Utterance {
    return this.play(dtmfTones(keys, this.o.rate), { interruptible: false });
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
    for (const session of this.sessions.values()) void session?.close();
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

  /**
   * Says one piece of `u` with the voice serving. A voice that fails on it (no connection, no first audio by the
   * deadline while another voice is left, an error mid-piece) hands the call to the next voice, which says the piece
   * again from its start: the pieces before it were already queued and stay as they were.
   */
  private async synthesize(u: Utterance, text: string): Promise<void> {
    for (;;) {
      if (u.interrupted || this.stopped) return;
      const voice = this.o.voices.current;
      const result = await this.synthesizeWith(voice, u, text);
      if (result === 'done') return;
      if (this.o.voices.fail(result.reason, voice)) continue;
      this.o.events.failed(result.error);
      return;
    }
  }

  private async synthesizeWith(
    voice: VoiceChoice,
    u: Utterance,
    text: string,
  ): Promise<'done' | { reason: FallbackReason; error: unknown }> {
    const replySignal = this.o.replySignal();
    const requested = this.o.timers.now();
    let first = true;
    let samples = 0;
    const framer = Framer.forRate(this.o.rate);
    // Each synthesis's lead-in is cut (audio/lead-in.ts): all of it on the first piece of an utterance, which follows
    // the caller's turn or a pause, down to a short natural gap on the sentences after it.
    const leadIn = new LeadInTrimmer(this.o.rate, { first: u.pieces.length === 0, level: this.voiceLevels.get(voice) });
    // The first-audio deadline (only while another voice is left) stops the synthesis through its own signal, so the
    // voice ends quietly.
    const deadline = new AbortController();
    const hasDeadline = this.o.voices.hasNext;
    const signal = !hasDeadline
      ? replySignal
      : replySignal
        ? AbortSignal.any([replySignal, deadline.signal])
        : deadline.signal;
    const timer = hasDeadline
      ? providerDeadline(this.o.timers, this.o.firstAudioDeadlineMs ?? FALLBACK_DEFAULTS.voiceFirstAudioMs, () =>
          deadline.abort(),
        )
      : null;
    const missed = (): { reason: FallbackReason; error: Error } => ({
      reason: 'timeout',
      error: new Error(`the ${voice.config.engine} voice gave no audio in time`),
    });
    try {
      let engine: TtsEngine;
      try {
        engine = voice.engine();
      } catch (error) {
        return { reason: 'connect', error };
      }
      for await (const chunk of engine.synthesize(this.spokenText(voice, text), {
        sampleRate: this.o.rate,
        voiceId: voice.config.voice_id,
        speed: voice.config.speed,
        ...(signal ? { signal } : {}),
      })) {
        if (u.interrupted || this.stopped || replySignal?.aborted) return 'done';
        if (deadline.signal.aborted) return missed();
        const audio = leadIn.push(chunk.samples);
        if (audio.length === 0) continue;
        if (first) {
          timer?.clear();
          this.o.events.firstAudio(this.o.timers.now() - requested);
          first = false;
        }
        samples += audio.length;
        for (const frame of framer.push(audio)) this.queueFrame(u, frame);
      }
      if (deadline.signal.aborted && first && !u.interrupted && !replySignal?.aborted && !this.stopped) return missed();
      this.voiceLevels.set(voice, leadIn.voiceLevel);
      const rest = leadIn.end();
      samples += rest.length;
      for (const frame of framer.push(rest)) this.queueFrame(u, frame);
      const last = framer.flush();
      if (last && !u.interrupted) this.queueFrame(u, last);
    } catch (error) {
      if (u.interrupted || replySignal?.aborted || this.stopped) return 'done';
      if (deadline.signal.aborted && first) return missed();
      // Nothing came: the voice could not be reached; audio then an error: it broke off.
      return { reason: first ? 'connect' : 'error', error };
    } finally {
      timer?.clear();
    }
    u.pieces.push({ text, audioMs: (samples / this.o.rate) * 1000 });
    return 'done';
  }

  private spokenText(voice: VoiceChoice, text: string): string {
    let spoken = this.spokenBy.get(voice);
    if (!spoken) this.spokenBy.set(voice, (spoken = spokenTextFor(voice.config) ?? ((t: string) => t)));
    return spoken(text);
  }

  /** The voice's session on this line, when it is a streaming voice (one connection for the call). */
  private voiceSession(voice: VoiceChoice): TtsSession | null {
    let session = this.sessions.get(voice);
    if (session !== undefined) return session;
    const rate = this.o.rate;
    let engine: TtsEngine;
    try {
      engine = voice.engine();
    } catch {
      // Not made: the piece goes the synthesize way, which reports the failure and hands over.
      return null;
    }
    session = engine.openSession && (rate === 8000 || rate === 16000) ? engine.openSession({ sampleRate: rate }) : null;
    this.sessions.set(voice, session);
    return session;
  }

  /**
   * One more piece of `u`'s text to the streaming voice, at once (the voice holds it until the utterance
   * before has all its audio); the first piece also starts playing `u`'s audio after that utterance's.
   */
  private stream(u: Utterance, voice: VoiceChoice, session: TtsSession, text: string): void {
    if (u.interrupted || this.stopped) return;
    const spoken = this.spokenText(voice, text);
    if (!u.voice || !u.voiceTiming) {
      const stream = session.utterance();
      const timing: VoiceTiming = { pieces: [], words: () => stream.words, audioMs: 0, leadInCutMs: 0 };
      u.voice = stream;
      u.voiceTiming = timing;
      u.synthesis = u.synthesis.then(() => this.playVoice(u, voice, stream, timing));
    }
    u.voiceTiming.pieces.push({ text, spoken });
    u.voice.write(spoken);
  }

  /**
   * A streaming voice's audio of `u`, straight into the pacer. A voice that fails on it (an error, a dropped
   * connection, no first audio by the deadline while another voice is left) hands the call to the next voice, which
   * says the utterance's pieces again from their start.
   */
  private async playVoice(u: Utterance, voice: VoiceChoice, stream: TtsUtteranceStream, timing: VoiceTiming) {
    const result = await this.playStream(u, voice, stream, timing);
    if (result === 'done') return;
    if (u.voice === stream) {
      u.voice = null;
      u.voiceTiming = null;
    }
    if (!this.o.voices.fail(result.reason, voice)) {
      this.o.events.failed(result.error);
      return;
    }
    for (const piece of timing.pieces) await this.synthesize(u, piece.text);
  }

  private async playStream(
    u: Utterance,
    voice: VoiceChoice,
    stream: TtsUtteranceStream,
    timing: VoiceTiming,
  ): Promise<'done' | { reason: FallbackReason; error: unknown }> {
    if (u.interrupted || this.stopped) {
      stream.cancel();
      return 'done';
    }
    const signal = this.o.replySignal();
    const cut = (): void => stream.cancel();
    if (signal?.aborted) cut();
    signal?.addEventListener('abort', cut, { once: true });
    let missed = false;
    const timer = this.o.voices.hasNext
      ? providerDeadline(this.o.timers, this.o.firstAudioDeadlineMs ?? FALLBACK_DEFAULTS.voiceFirstAudioMs, () => {
          missed = true;
          stream.cancel();
        })
      : null;
    const requested = this.o.timers.now();
    let first = true;
    let samples = 0;
    const framer = Framer.forRate(this.o.rate);
    // One provider utterance says the whole reply: only its start is a lead-in (its pauses between sentences are the
    // voice's own). A first chunk that is all silence gives nothing, and the first-audio deadline still runs.
    const leadIn = new LeadInTrimmer(this.o.rate, { first: true, level: this.voiceLevels.get(voice) });
    try {
      for await (const chunk of stream.audio()) {
        if (u.interrupted || this.stopped) {
          stream.cancel();
          return 'done';
        }
        const audio = leadIn.push(chunk.samples);
        if (audio.length === 0) continue;
        if (first) {
          timer?.clear();
          this.o.events.firstAudio(this.o.timers.now() - requested);
          first = false;
          timing.leadInCutMs = (leadIn.cut / this.o.rate) * 1000;
        }
        samples += audio.length;
        timing.audioMs = (samples / this.o.rate) * 1000;
        for (const frame of framer.push(audio)) this.queueFrame(u, frame);
      }
      if (missed && first && !u.interrupted && !signal?.aborted && !this.stopped)
        return { reason: 'timeout', error: new Error('the streaming voice gave no audio in time') };
      this.voiceLevels.set(voice, leadIn.voiceLevel);
      const rest = leadIn.end();
      samples += rest.length;
      timing.audioMs = (samples / this.o.rate) * 1000;
      for (const frame of framer.push(rest)) this.queueFrame(u, frame);
      const last = framer.flush();
      if (last && !u.interrupted) this.queueFrame(u, last);
      return 'done';
    } catch (error) {
      if (u.interrupted || signal?.aborted || this.stopped) return 'done';
      if (missed && first) return { reason: 'timeout', error };
      return { reason: first ? 'connect' : 'error', error };
    } finally {
      timer?.clear();
      signal?.removeEventListener('abort', cut);
    }
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
      u.voice?.cancel();
      const from = u.interrupt(now);
      this.o.events.ended(u, from ?? now, now);
    }
    return cut;
  }
}

/** What every voice of one call shares: the agent's voices in order, the clocks. */
export interface CallVoiceSettings {
  voices: ProviderChain<VoiceChoice>;
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
    voices: settings.voices,
    timers: settings.timers,
    clock: settings.clock,
    pacerWakeups: settings.pacerWakeups,
    replySignal,
    recording,
    events,
  });
}

/** One voice and no other: a call whose voice has no fallback to move to (the session's tests, a bare engine). */
export function singleVoice(voice: AgentConfig['voice'], tts: TtsEngine): ProviderChain<VoiceChoice> {
  return new ProviderChain('voice', [{ name: voice.engine, provider: { config: voice, engine: () => tts } }]);
}

/** Events of a voice whose words are nobody's record (a warm transfer's second leg): only a failure is told. */
export function unheardVoiceEvents(failed: (error: unknown) => void): AgentVoiceEvents {
  const noop = (): void => undefined;
  return { queued: noop, started: noop, ended: noop, drained: noop, frameSent: noop, firstAudio: noop, failed };
}
