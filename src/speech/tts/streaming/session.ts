// A call's voice over one provider WebSocket (ElevenLabs, Cartesia, Deepgram Aura): the connection is
// opened when the call first speaks, kept for all its utterances, and closed with the call. What
// differs between providers — their messages out, their reading of messages in — is a VoiceWire
// (./wire.ts); this file holds what they share: one utterance spoken at a time (the next one's text
// waits until the one before has all its audio or was cut), audio decoded from the line's own coding,
// word timings kept per utterance, and provider failures turned into coded errors.
import type WebSocket from 'ws';
import { muLawDecode } from '../../../audio/g711.ts';
import { bytesToInt16, type MediaRate } from '../../../audio/pcm.ts';
import { cryptoRandomHex, type RandomHex } from '../../../clock.ts';
import { EgressRefusedError } from '../../../net/egress.ts';
import { UpstreamError } from '../../../net/upstream-error.ts';
import type { OpenWebSocket } from '../../../net/websocket.ts';
import { SpeechError } from '../../errors.ts';
import type {
  PcmChunk,
  TtsEngine,
  TtsSession,
  TtsSessionOptions,
  TtsSynthesisOptions,
  TtsUtteranceStream,
  WordTiming,
} from '../../types.ts';
import { PcmOutput } from '../output.ts';
import type { VoiceWire, WireEvent } from './wire.ts';

interface SocketVoiceOptions {
  wire: VoiceWire;
  openWebSocket: OpenWebSocket;
  sampleRate: MediaRate;
  /** Context ids (one per utterance); random by default, fixed in tests. */
  randomHex?: RandomHex;
}

/** The shared machinery of the streaming voices: one per call. */
export class SocketVoiceSession implements TtsSession {
  /** Waiting utterances, the one being spoken first. */
  private readonly queue: SocketUtterance[] = [];
  private socket: Promise<WebSocket> | null = null;
  private closed = false;
  private readonly randomHex: RandomHex;

  constructor(private readonly o: SocketVoiceOptions) {
    this.randomHex = o.randomHex ?? cryptoRandomHex;
  }

  get sampleRate(): MediaRate {
    return this.o.sampleRate;
  }

  utterance(): TtsUtteranceStream {
    const u = new SocketUtterance(this, this.randomHex(8), this.o.wire.timesWords);
    if (this.closed) {
      u.fail(new SpeechError('TTS_ENGINE_CLOSED', `the ${this.o.wire.provider} voice of this call is closed`));
      return u;
    }
    this.queue.push(u);
    if (this.queue.length === 1) void this.activate(u);
    return u;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const u of this.queue.splice(0)) u.fail(new SpeechError('TTS_ENGINE_CLOSED', 'the call ended'));
    const pending = this.socket;
    this.socket = null;
    if (!pending) return;
    const socket = await pending.catch(() => null);
    if (!socket) return;
    try {
      for (const message of this.o.wire.closing()) socket.send(message);
    } catch {
      // Closing anyway.
    }
    socket.close(1000);
  }

  /** Sends messages on the open connection (the utterance is the one being spoken). */
  send(messages: string[]): void {
    if (messages.length === 0 || !this.socket) return;
    void this.socket.then(
      (socket) => {
        if (socket.readyState !== socket.OPEN) return;
        for (const message of messages) socket.send(message);
      },
      () => undefined,
    );
  }

  /** `u` is done (all heard, cut or failed): the next utterance's text may go. */
  settled(u: SocketUtterance): void {
    const index = this.queue.indexOf(u);
    if (index === -1) return;
    this.queue.splice(index, 1);
    if (index === 0 && this.queue[0]) void this.activate(this.queue[0]);
  }

  get wire(): VoiceWire {
    return this.o.wire;
  }

  isActive(u: SocketUtterance): boolean {
    return this.queue[0] === u;
  }

  private async activate(u: SocketUtterance): Promise<void> {
    try {
      await this.connect();
    } catch (error) {
      u.fail(error instanceof SpeechError ? error : connectFailure(this.o.wire.provider, error));
      this.settled(u);
      return;
    }
    if (this.queue[0] !== u) return;
    u.live();
  }

  private connect(): Promise<WebSocket> {
    if (this.socket) return this.socket;
    const { wire } = this.o;
    const opening = this.o.openWebSocket(wire.url, { headers: wire.headers }).then((socket) => {
      for (const message of wire.opening()) socket.send(message);
      socket.on('message', (data: Buffer, binary: boolean) => this.onMessage(data, binary));
      socket.on('close', (code: number) => this.onClose(opening, code));
      // An 'error' is followed by 'close': the close fails the utterance being spoken.
      socket.on('error', () => undefined);
      return socket;
    });
    this.socket = opening;
    opening.catch(() => {
      if (this.socket === opening) this.socket = null;
    });
    return opening;
  }

  private onMessage(data: Buffer, binary: boolean): void {
    let events: WireEvent[];
    try {
      events = this.o.wire.read(data, binary);
    } catch (error) {
      const failure =
        error instanceof SpeechError
          ? error
          : new SpeechError('TTS_PROVIDER_DISCONNECTED', `${this.o.wire.provider} sent a message its protocol has not`);
      this.queue[0]?.fail(failure);
      if (this.queue[0]) this.settled(this.queue[0]);
      return;
    }
    for (const event of events) {
      const u = event.context === null ? this.queue[0] : this.queue.find((candidate) => candidate.id === event.context);
      // Audio of an utterance already cut (or of none) is dropped.
      if (!u) continue;
      switch (event.type) {
        case 'audio':
          u.audioIn(event.bytes);
          break;
        case 'words':
          u.timed(event.words);
          break;
        case 'done':
          u.finish();
          this.settled(u);
          break;
        case 'error':
          u.fail(event.error);
          this.settled(u);
          break;
      }
    }
  }

  private onClose(socket: Promise<WebSocket>, code: number): void {
    if (this.socket !== socket) return;
    this.socket = null;
    if (this.closed) return;
    // Closed between utterances (a provider's idle timeout): the next utterance opens a new one.
    const speaking = this.queue[0];
    if (!speaking?.isLive) return;
    speaking.fail(
      new SpeechError(
        'TTS_PROVIDER_DISCONNECTED',
        `${this.o.wire.provider} closed the connection (code ${code}) while speaking`,
      ),
    );
    this.settled(speaking);
  }
}

/**
 * One piece of text spoken outside a call (synthesize()): a session of its own, opened for it and closed
 * after, at the nearer of the provider's rates; the audio resampled to the rate asked for.
 */
export async function* speakOnce(
  engine: Required<Pick<TtsEngine, 'openSession'>>,
  text: string,
  options: TtsSynthesisOptions,
): AsyncIterable<PcmChunk> {
  if (text.trim() === '' || options.signal?.aborted) return;
  const rate = options.sampleRate <= 8000 ? 8000 : 16000;
  const session = engine.openSession({ sampleRate: rate });
  const utterance = session.utterance();
  const stop = (): void => utterance.cancel();
  options.signal?.addEventListener('abort', stop, { once: true });
  try {
    utterance.write(text);
    utterance.end();
    const output = new PcmOutput(options.sampleRate, { trimLeadIn: options.trimLeadIn ?? false });
    for await (const chunk of utterance.audio()) yield* output.push(chunk.samples, chunk.sampleRate);
    if (!options.signal?.aborted) yield* output.end();
  } finally {
    options.signal?.removeEventListener('abort', stop);
    await session.close();
  }
}

function connectFailure(provider: string, error: unknown): SpeechError {
  if (error instanceof UpstreamError)
    return new SpeechError('TTS_PROVIDER_REFUSED', `${provider} refused the connection (HTTP ${error.status})`, {
      cause: error,
    });
  if (error instanceof EgressRefusedError)
    return new SpeechError('TTS_PROVIDER_UNREACHABLE', `${provider}: ${error.message}`, { cause: error });
  return new SpeechError('TTS_PROVIDER_UNREACHABLE', `${provider} could not be reached`, { cause: error });
}

/** One utterance of a SocketVoiceSession. */
class SocketUtterance implements TtsUtteranceStream {
  private readonly pendingText: string[] = [];
  private ended = false;
  private cancelled = false;
  private finished = false;
  private error: SpeechError | null = null;
  private connected = false;
  private readonly chunks: PcmChunk[] = [];
  private wake: (() => void) | null = null;
  /** A PCM16 byte split across two messages. */
  private odd: number | null = null;
  private readonly timings: WordTiming[] | null;
  private sentText = false;

  constructor(
    private readonly session: SocketVoiceSession,
    readonly id: string,
    timesWords: boolean,
  ) {
    this.timings = timesWords ? [] : null;
  }

  get words(): readonly WordTiming[] | null {
    return this.timings;
  }

  get isLive(): boolean {
    return this.connected && !this.finished;
  }

  write(text: string): void {
    if (this.ended || this.finished || text.trim() === '') return;
    if (!this.connected) {
      this.pendingText.push(text);
      return;
    }
    this.sendText(text);
  }

  end(): void {
    if (this.ended || this.finished) return;
    this.ended = true;
    if (this.connected) this.endOnWire();
  }

  cancel(): void {
    if (this.finished) return;
    this.cancelled = true;
    if (this.connected) this.session.send(this.session.wire.cancel(this.id));
    this.finish();
    this.session.settled(this);
  }

  /** Its turn on the open connection: the text held so far goes. */
  live(): void {
    if (this.finished) return;
    this.connected = true;
    for (const text of this.pendingText.splice(0)) this.sendText(text);
    if (this.ended) this.endOnWire();
  }

  audioIn(bytes: Uint8Array): void {
    if (this.finished) return;
    const samples = this.session.wire.encoding === 'mulaw' ? muLawDecode(bytes) : this.pcm(bytes);
    if (samples.length === 0) return;
    this.chunks.push({ samples, sampleRate: this.session.sampleRate });
    this.notify();
  }

  timed(words: WordTiming[]): void {
    if (!this.finished) this.timings?.push(...words);
  }

  finish(): void {
    if (this.finished) return;
    this.finished = true;
    this.notify();
  }

  fail(error: SpeechError): void {
    if (this.finished) return;
    this.error = error;
    this.finish();
  }

  async *audio(): AsyncIterable<PcmChunk> {
    for (;;) {
      if (this.cancelled) return;
      const chunk = this.chunks.shift();
      if (chunk) {
        yield chunk;
        continue;
      }
      if (this.error) throw this.error;
      if (this.finished) return;
      await new Promise<void>((resolve) => (this.wake = resolve));
    }
  }

  private sendText(text: string): void {
    this.session.send(this.session.wire.text(this.id, text, !this.sentText));
    this.sentText = true;
  }

  private endOnWire(): void {
    // Nothing was said: there is no audio to wait for.
    if (!this.sentText) {
      this.finish();
      this.session.settled(this);
      return;
    }
    this.session.send(this.session.wire.end(this.id));
  }

  private pcm(bytes: Uint8Array): Int16Array {
    let data = bytes;
    if (this.odd !== null) {
      const joined = new Uint8Array(bytes.length + 1);
      joined[0] = this.odd;
      joined.set(bytes, 1);
      data = joined;
      this.odd = null;
    }
    if (data.length % 2 === 1) {
      this.odd = data[data.length - 1]!;
      data = data.subarray(0, data.length - 1);
    }
    // Copied: the message's buffer is not ours to keep, nor always aligned.
    return bytesToInt16(data.slice());
  }

  private notify(): void {
    const wake = this.wake;
    this.wake = null;
    wake?.();
  }
}

/**
 * A streaming voice as an engine: each call opens its own session (one connection) speaking through the provider's
 * wire, and a piece spoken outside a call gets a session of its own (speakOnce). A provider only names its wire.
 */
export abstract class StreamingVoiceEngine<O extends { openWebSocket: OpenWebSocket }> implements TtsEngine {
  abstract readonly name: string;

  constructor(private readonly o: O) {}

  /** The provider's messages, for a session at `rate`. */
  protected abstract wire(settings: Omit<O, 'openWebSocket'>, rate: MediaRate): VoiceWire;

  synthesize(text: string, options: TtsSynthesisOptions): AsyncIterable<PcmChunk> {
    return speakOnce(this, text, options);
  }

  openSession(options: TtsSessionOptions): TtsSession {
    const { openWebSocket, ...settings } = this.o;
    return new SocketVoiceSession({
      wire: this.wire(settings, options.sampleRate),
      openWebSocket,
      sampleRate: options.sampleRate,
    });
  }

  async close(): Promise<void> {
    // Each call's session holds and closes its own connection.
  }
}
