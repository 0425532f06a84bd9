// Browser calls: 16 kHz PCM16 frames both ways (already the internal format), or Opus packets
// both ways, plus JSON control and live events (protocol.ts).
import type { Logger } from 'pino';
import WebSocket from 'ws';
import { AudioError } from '../../audio/errors.ts';
import { Framer } from '../../audio/framer.ts';
import { OpusCodec } from '../../audio/opus/index.ts';
import type { DisconnectionReason } from '../../records/record.ts';
import type { CallTransport, SessionNotice, TransportHandlers } from '../../call/transport.ts';
import { InboundPace } from '../../carriers/inbound-pace.ts';
import type { TransportOptions } from '../../carriers/options.ts';
import {
  WEB_OPUS_BITRATE,
  WEB_OPUS_COMPLEXITY,
  WEB_SAMPLE_RATE,
  WebClientMessage,
  type WebCodec,
  type WebServerMessage,
} from './protocol.ts';

export class WebTransport implements CallTransport {
  readonly kind = 'web' as const;
  private handlers: TransportHandlers | null = null;
  private readonly framer = new Framer();
  private hungUp = false;
  /** The far end hung up or its socket closed (not this side closing it). */
  private farEndGone = false;
  private readonly pace: InboundPace;
  /** Present when the call speaks Opus: one packet per binary message both ways. */
  private readonly opus: OpusCodec | undefined;
  dropped = 0;

  constructor(
    private readonly socket: WebSocket,
    private readonly log: Logger,
    private readonly options: TransportOptions & { codec?: WebCodec } = {},
  ) {
    this.pace = new InboundPace(WEB_SAMPLE_RATE, options.now);
    this.opus =
      options.codec === 'opus'
        ? new OpusCodec({
            rate: WEB_SAMPLE_RATE,
            channels: 1,
            bitrate: WEB_OPUS_BITRATE,
            complexity: WEB_OPUS_COMPLEXITY,
          })
        : undefined;
    socket.on('close', () => this.farEnd());
    socket.on('error', (error) => this.log.warn({ err: error }, 'browser socket error'));
    // Closed while its start was checked against the store: the far end is gone already.
    if (socket.readyState === WebSocket.CLOSING || socket.readyState === WebSocket.CLOSED) this.farEnd();
  }

  receive(data: Buffer, isBinary: boolean): void {
    if (isBinary) {
      const samples = this.opus ? this.decodeOpus(this.opus, data) : this.pcm(data);
      if (!samples) return;
      for (const frame of this.framer.push(samples)) {
        const verdict = this.pace.admit(frame.length);
        if (verdict === 'accept') this.handlers?.audio(frame);
        else if (verdict === 'close') return this.cutOff();
      }
      return;
    }
    let json: unknown;
    try {
      json = JSON.parse(data.toString('utf8'));
    } catch {
      json = undefined;
    }
    const parsed = WebClientMessage.safeParse(json);
    if (!parsed.success) {
      this.dropped++;
      this.log.warn({ sample: data.toString('utf8').slice(0, 120) }, 'malformed browser message dropped');
      return;
    }
    const message = parsed.data;
    if (message.type === 'mark') this.handlers?.mark(message.name);
    else if (message.type === 'dtmf') this.handlers?.dtmf(message.digit);
    else if (message.type === 'hangup') this.farEnd();
  }

  private pcm(data: Buffer): Int16Array | undefined {
    if (data.length % 2 !== 0) {
      this.dropped++;
      this.log.warn({ bytes: data.length }, 'odd-length audio frame dropped');
      return undefined;
    }
    // Copy: the socket reuses its buffers, and Int16Array needs 2-byte alignment.
    const samples = new Int16Array(data.length / 2);
    Buffer.from(samples.buffer).set(data);
    return samples;
  }

  /** A packet libopus cannot read is dropped like a malformed frame: the call goes on. */
  private decodeOpus(opus: OpusCodec, packet: Buffer): Int16Array | undefined {
    try {
      return opus.decode(packet);
    } catch (error) {
      if (!(error instanceof AudioError)) throw error;
      this.dropped++;
      this.log.warn({ bytes: packet.length, code: error.code }, 'undecodable Opus packet dropped');
      return undefined;
    }
  }

  /** A page that keeps sending audio faster than real time is closed as a policy violation. */
  private cutOff(): void {
    if (this.socket.readyState !== WebSocket.OPEN) return;
    this.log.warn('browser call closed: its audio kept running ahead of real time');
    this.send({ type: 'error', code: 'AUDIO_AHEAD', message: 'audio arrived faster than real time' });
    this.socket.close(1008, 'audio ahead of real time');
  }

  private farEnd(): void {
    if (this.hungUp) return;
    this.hungUp = true;
    this.farEndGone = true;
    this.handlers?.hangup();
  }

  send(message: WebServerMessage): void {
    if (this.socket.readyState === WebSocket.OPEN) this.socket.send(JSON.stringify(message));
  }

  attach(handlers: TransportHandlers): void {
    this.handlers = handlers;
    // The caller hung up before the session took the line (its record was being read): it hears so now.
    if (this.farEndGone) queueMicrotask(() => handlers.hangup());
  }

  sendAudio(frame: Int16Array): void {
    if (this.socket.readyState !== WebSocket.OPEN) {
      this.options.onFrameDropped?.();
      return;
    }
    this.socket.send(
      this.opus ? this.opus.encode(frame) : Buffer.from(frame.buffer, frame.byteOffset, frame.byteLength),
      { binary: true },
    );
  }

  sendMark(name: string): void {
    this.send({ type: 'mark', name });
  }

  clear(): void {
    this.send({ type: 'clear' });
  }

  notify(notice: SessionNotice): void {
    if (notice.type === 'call_started')
      this.send({ ...notice, sample_rate: WEB_SAMPLE_RATE, codec: this.opus ? 'opus' : 'pcm' });
    else this.send(notice);
  }

  close(_reason: DisconnectionReason): void {
    this.hungUp = true;
    if (this.socket.readyState === WebSocket.OPEN || this.socket.readyState === WebSocket.CONNECTING)
      this.socket.close(1000, 'call ended');
  }
}
