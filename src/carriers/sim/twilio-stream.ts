// The carrier's side of a Twilio Media Stream, as docs/twilio.md describes it: connected and
// start first, then 20 ms μ-law media frames in real time with sequenceNumber, chunk and
// timestamp; outbound audio is "played" in real time, marks are echoed once the audio before
// them has played, and `clear` drops queued audio and echoes every pending mark at once.
// Used by simulated phones, the load harness and the end-to-end tests; a carrier whose stream
// differs only in its words (Telnyx's) is spoken with its own StreamDialect.
import { EventEmitter } from 'node:events';
import WebSocket from 'ws';

const FRAME_BYTES = 160; // 20 ms of 8 kHz μ-law
const FRAME_MS = 20;
/** 0xff is μ-law silence. */
const SILENCE_BASE64 = Buffer.alloc(FRAME_BYTES, 0xff).toString('base64');
// Base64 of each 20 ms frame of audio spoken before: a load run speaks the same phrases
// thousands of times, and encoding them once keeps the simulated phones cheap (a phrase must
// not be changed after it was spoken).
const encodedFrames = new WeakMap<Uint8Array, string[]>();

function base64Frames(mulaw: Uint8Array): string[] {
  let frames = encodedFrames.get(mulaw);
  if (!frames) {
    frames = [];
    for (let offset = 0; offset < mulaw.length; offset += FRAME_BYTES) {
      const frame = Buffer.alloc(FRAME_BYTES, 0xff);
      frame.set(mulaw.subarray(offset, Math.min(offset + FRAME_BYTES, mulaw.length)));
      frames.push(frame.toString('base64'));
    }
    encodedFrames.set(mulaw, frames);
  }
  return frames;
}

/**
 * How a carrier's stream words what the phone sends; Twilio's by default. Another carrier whose stream is Twilio's in
 * all but its words (Telnyx's stand-in, under test/helpers/) gives its own.
 */
export interface StreamDialect {
  connected(): Record<string, unknown>;
  start(o: {
    sequence: number;
    streamSid: string;
    callSid: string;
    accountSid: string;
    customParameters: Record<string, string>;
  }): Record<string, unknown>;
  /** One 20 ms frame, as the text sent. */
  media(o: { sequence: number; chunk: number; timestampMs: number; payload: string; streamSid: string }): string;
  dtmf(o: { sequence: number; streamSid: string; digit: string }): Record<string, unknown>;
  stop(o: { sequence: number; streamSid: string; callSid: string; accountSid: string }): Record<string, unknown>;
  /** A mark echoed once the audio before it played. */
  mark(o: { sequence: number; streamSid: string; name: string }): Record<string, unknown>;
}

/** JSON of the last stream id a media frame named: a load run sends thousands of frames a second. */
let lastSid = '';
let lastSidJson = '""';
const sidJson = (sid: string): string => {
  if (sid !== lastSid) {
    lastSid = sid;
    lastSidJson = JSON.stringify(sid);
  }
  return lastSidJson;
};

export const TWILIO_DIALECT: StreamDialect = {
  connected: () => ({ event: 'connected', protocol: 'Call', version: '1.0.0' }),
  start: (o) => ({
    event: 'start',
    sequenceNumber: String(o.sequence),
    start: {
      accountSid: o.accountSid,
      streamSid: o.streamSid,
      callSid: o.callSid,
      tracks: ['inbound'],
      mediaFormat: { encoding: 'audio/x-mulaw', sampleRate: 8000, channels: 1 },
      customParameters: o.customParameters,
    },
    streamSid: o.streamSid,
  }),
  // Built by concatenation: the same JSON as stringify gives, key order kept, at a fraction of the cost.
  media: (o) =>
    `{"event":"media","sequenceNumber":"${o.sequence}","media":{"track":"inbound","chunk":"${o.chunk}","timestamp":"${o.timestampMs}","payload":"${o.payload}"},"streamSid":${sidJson(o.streamSid)}}`,
  dtmf: (o) => ({
    event: 'dtmf',
    streamSid: o.streamSid,
    sequenceNumber: String(o.sequence),
    dtmf: { track: 'inbound_track', digit: o.digit },
  }),
  stop: (o) => ({
    event: 'stop',
    sequenceNumber: String(o.sequence),
    stop: { accountSid: o.accountSid, callSid: o.callSid },
    streamSid: o.streamSid,
  }),
  mark: (o) => ({ event: 'mark', sequenceNumber: String(o.sequence), streamSid: o.streamSid, mark: { name: o.name } }),
};

export interface TwilioStreamOptions {
  /** ws:// or wss:// address of the media endpoint. */
  url: string;
  /** The carrier's words for the stream's messages; Twilio's by default. */
  dialect?: StreamDialect;
  /** Every second media frame leaves after the one behind it (a network that reorders packets). */
  swapFramePairs?: boolean;
  customParameters: Record<string, string>;
  accountSid?: string;
  callSid?: string;
  streamSid?: string;
  /** Keep every message received and frame played (`received`, `played`); default true. A load run turns it off. */
  history?: boolean;
}

export interface PlayedFrame {
  /** ms since the stream started when this frame began to play. */
  at: number;
  payload: Buffer;
}

type Queued = { kind: 'audio'; payload: Buffer } | { kind: 'mark'; name: string };

export interface TwilioStreamEvents {
  /** A server message, as parsed JSON. */
  message: [Record<string, unknown>];
  /** An outbound audio frame started playing. */
  played: [PlayedFrame];
  mark: [string];
  clear: [];
  close: [number, string];
}

/** Send times kept per caller: 1.28 s of frames, enough to time a reply against the audio before it. */
const SEND_TIMES_KEPT = 64;

export class TwilioStreamCaller extends EventEmitter<TwilioStreamEvents> {
  readonly callSid: string;
  readonly streamSid: string;
  readonly accountSid: string;
  private ws: WebSocket | undefined;
  private sequence = 0;
  private chunk = 0;
  private startedAt = 0;
  private readonly playQueue: Queued[] = [];
  private playTimer: NodeJS.Timeout | undefined;
  private sendTimer: NodeJS.Timeout | undefined;
  /** Base64 payloads waiting to be sent, one per 20 ms frame. */
  private sendQueue: string[] = [];
  private sendResolvers: (() => void)[] = [];
  private sentFrames = 0;
  /** performance.now() at which each of the last SEND_TIMES_KEPT frames left, by frame index. */
  private readonly sendTimes = new Float64Array(SEND_TIMES_KEPT);
  /** Every outbound frame that was played, in order. */
  readonly played: PlayedFrame[] = [];
  readonly received: Record<string, unknown>[] = [];
  closed = false;
  closeCode: number | undefined;

  private readonly history: boolean;
  private readonly dialect: StreamDialect;
  /** A media frame held back to leave after the next (swapFramePairs). */
  private heldFrame: string | undefined;

  constructor(private readonly options: TwilioStreamOptions) {
    super();
    this.history = options.history ?? true;
    const hex = (n: number) => Array.from({ length: n }, () => Math.floor(Math.random() * 16).toString(16)).join('');
    this.accountSid = options.accountSid ?? `AC${hex(32)}`;
    this.callSid = options.callSid ?? `CA${hex(32)}`;
    this.streamSid = options.streamSid ?? `MZ${hex(32)}`;
    this.dialect = options.dialect ?? TWILIO_DIALECT;
  }

  /** Media frames sent so far (the next frame's index). */
  get framesSent(): number {
    return this.sentFrames;
  }

  /** When frame `index` was sent (performance.now()), if it was among the last SEND_TIMES_KEPT. */
  frameSentAt(index: number): number | undefined {
    if (index >= this.sentFrames || index < this.sentFrames - SEND_TIMES_KEPT || index < 0) return undefined;
    return this.sendTimes[index % SEND_TIMES_KEPT];
  }

  /** ms since the stream started. */
  now(): number {
    return performance.now() - this.startedAt;
  }

  /** Opens the socket and sends connected + start. */
  async connect(): Promise<void> {
    const ws = new WebSocket(this.options.url);
    this.ws = ws;
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
    });
    this.startedAt = performance.now();
    ws.on('message', (data) => this.onMessage(data.toString()));
    ws.on('close', (code, reason) => {
      this.closed = true;
      this.closeCode = code;
      this.stopTimers();
      this.emit('close', code, reason.toString());
    });
    ws.on('error', () => undefined);
    this.send(this.dialect.connected());
    this.send(
      this.dialect.start({
        sequence: ++this.sequence,
        streamSid: this.streamSid,
        callSid: this.callSid,
        accountSid: this.accountSid,
        customParameters: this.options.customParameters,
      }),
    );
    this.startSending();
  }

  /** Queues caller audio (μ-law 8 kHz); resolves when the last of it has been sent in real time. */
  speak(mulaw: Uint8Array): Promise<void> {
    for (const frame of base64Frames(mulaw)) this.sendQueue.push(frame);
    return new Promise((resolve) => this.sendResolvers.push(resolve));
  }

  /** Caller silence for `ms` (the line always carries frames, as a phone line does). */
  pause(ms: number): Promise<void> {
    const frames = Math.ceil(Math.round((ms / FRAME_MS) * FRAME_BYTES) / FRAME_BYTES);
    for (let i = 0; i < frames; i++) this.sendQueue.push(SILENCE_BASE64);
    return new Promise((resolve) => this.sendResolvers.push(resolve));
  }

  sendDtmf(digit: string): void {
    this.send(this.dialect.dtmf({ sequence: ++this.sequence, streamSid: this.streamSid, digit }));
  }

  /** Sends anything on the socket (tests of malformed frames). */
  sendRaw(text: string): void {
    this.ws?.send(text);
  }

  /** The caller hangs up: stop, then the carrier closes the socket. */
  async hangUp(): Promise<void> {
    if (this.closed || !this.ws) return;
    this.send(
      this.dialect.stop({
        sequence: ++this.sequence,
        streamSid: this.streamSid,
        callSid: this.callSid,
        accountSid: this.accountSid,
      }),
    );
    this.ws.close(1000, 'call ended');
    await this.waitForClose();
  }

  waitForClose(): Promise<void> {
    if (this.closed) return Promise.resolve();
    return new Promise((resolve) => this.once('close', () => resolve()));
  }

  /** Resolves with the first server message that `match` accepts (already received ones count). */
  waitFor(match: (message: Record<string, unknown>) => boolean, timeoutMs = 30_000): Promise<Record<string, unknown>> {
    const seen = this.received.find(match);
    if (seen) return Promise.resolve(seen);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.off('message', listener);
        reject(new Error(`no matching message within ${timeoutMs} ms`));
      }, timeoutMs);
      const listener = (message: Record<string, unknown>) => {
        if (!match(message)) return;
        clearTimeout(timer);
        this.off('message', listener);
        resolve(message);
      };
      this.on('message', listener);
    });
  }

  private send(message: Record<string, unknown>): void {
    if (this.ws?.readyState === WebSocket.OPEN) this.ws.send(JSON.stringify(message));
  }

  // Inbound audio leaves on a drift-free 20 ms schedule, silence when the caller says nothing.
  private startSending(): void {
    const tick = () => {
      if (this.closed) return;
      const payload = this.sendQueue.shift() ?? SILENCE_BASE64;
      this.chunk++;
      const sequence = ++this.sequence;
      if (this.ws?.readyState === WebSocket.OPEN) {
        const text = this.dialect.media({
          sequence,
          chunk: this.chunk,
          timestampMs: this.sentFrames * FRAME_MS,
          payload,
          streamSid: this.streamSid,
        });
        if (!this.options.swapFramePairs) this.ws.send(text);
        else if (this.heldFrame === undefined) this.heldFrame = text;
        else {
          this.ws.send(text);
          this.ws.send(this.heldFrame);
          this.heldFrame = undefined;
        }
      }
      this.sendTimes[this.sentFrames % SEND_TIMES_KEPT] = performance.now();
      this.sentFrames++;
      if (this.sendQueue.length === 0 && this.sendResolvers.length > 0) {
        for (const resolve of this.sendResolvers.splice(0)) resolve();
      }
      const next = this.startedAt + this.sentFrames * FRAME_MS - performance.now();
      this.sendTimer = setTimeout(tick, Math.max(0, next));
    };
    tick();
  }

  private onMessage(text: string): void {
    let message: Record<string, unknown>;
    try {
      message = JSON.parse(text) as Record<string, unknown>;
    } catch {
      return;
    }
    if (this.history) this.received.push(message);
    this.emit('message', message);
    if (message.event === 'media') {
      const payload = (message.media as { payload?: string } | undefined)?.payload ?? '';
      const bytes = Buffer.from(payload, 'base64');
      for (let offset = 0; offset < bytes.length; offset += FRAME_BYTES) {
        this.playQueue.push({ kind: 'audio', payload: bytes.subarray(offset, offset + FRAME_BYTES) });
      }
      this.schedulePlayback();
    } else if (message.event === 'mark') {
      const name = (message.mark as { name?: string } | undefined)?.name ?? '';
      this.playQueue.push({ kind: 'mark', name });
      this.schedulePlayback();
    } else if (message.event === 'clear') {
      const pending = this.playQueue.splice(0).filter((q): q is { kind: 'mark'; name: string } => q.kind === 'mark');
      this.emit('clear');
      for (const mark of pending) this.echoMark(mark.name);
    }
  }

  private echoMark(name: string): void {
    this.send(this.dialect.mark({ sequence: ++this.sequence, streamSid: this.streamSid, name }));
    this.emit('mark', name);
  }

  // Plays queued audio at real-time speed; a mark is echoed when everything before it played.
  private schedulePlayback(): void {
    if (this.playTimer || this.closed) return;
    const step = () => {
      this.playTimer = undefined;
      while (this.playQueue[0]?.kind === 'mark') this.echoMark((this.playQueue.shift() as { name: string }).name);
      const item = this.playQueue.shift();
      if (!item || item.kind !== 'audio') return;
      const frame = { at: this.now(), payload: item.payload };
      if (this.history) this.played.push(frame);
      this.emit('played', frame);
      this.playTimer = setTimeout(step, (item.payload.length / FRAME_BYTES) * FRAME_MS);
    };
    step();
  }

  private stopTimers(): void {
    if (this.playTimer) clearTimeout(this.playTimer);
    if (this.sendTimer) clearTimeout(this.sendTimer);
    this.playTimer = undefined;
    this.sendTimer = undefined;
    for (const resolve of this.sendResolvers.splice(0)) resolve();
  }
}
