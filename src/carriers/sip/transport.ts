// A SIP call's media as the session sees it (call/transport.ts): 20 ms frames both ways over RTP,
// at the negotiated codec's rate (8 kHz for G.711, 16 kHz for G.722, which the engines take as it
// is; a re-INVITE keeps the codec, so the rate holds for the call). In: the endpoint hears the
// negotiated address only, the receiver reorders and conceals and finds keypad digits. Out: each
// frame leaves as one packet when the session's pacer hands it over (the pacer already keeps real
// time, call/agent/pacer.ts). A phone keeps no queue of ours, so a mark is echoed when the audio
// sent before it has played out at the far side's clock, and clear() echoes the pending marks at
// once. The dialog (BYE, re-INVITE) stays with the signalling: it hands in hangups and holds, and
// is told when the session closes or the media times out.
import type { RandomHex } from '../../clock.ts';
import type { DisconnectionReason } from '../../records/record.ts';
import type { TimerHandle, Timers } from '../../timers.ts';
import type { CallTransport, SessionNotice, TransportHandlers } from '../../call/transport.ts';
import { MEDIA_TIMEOUT_MS } from './media-timeout.ts';
import { RtpEndpoint } from './rtp-endpoint.ts';
import type { BoundRtpPort } from './rtp-ports.ts';
import { RtpReceiver } from './rtp-receiver.ts';
import { RtpSender } from './rtp-sender.ts';
import type { NegotiatedMedia } from './sdp.ts';

const FRAME_MS = 20;
/** A key press sent to the far side: tone, then the gap before the next key. */
const KEY_TONE_MS = 100;
const KEY_GAP_MS = 60;

export interface SipTransportOptions {
  port: BoundRtpPort;
  media: NegotiatedMedia;
  timers: Timers;
  random: RandomHex;
  /** The SIP Call-ID of the dialog this media belongs to. */
  carrierCallId: string;
  /** The session ended the call: the signalling sends BYE. */
  onClose: (reason: DisconnectionReason) => void;
  /** No RTP for the media timeout: the signalling sends BYE and records why. */
  onMediaTimeout: () => void;
  mediaTimeoutMs?: number;
  /** An agent frame could not go out (counted for metrics). */
  onFrameDropped?: (() => void) | undefined;
}

export class SipTransport implements CallTransport {
  readonly kind = 'sip' as const;
  readonly sampleRate: 8000 | 16000;
  readonly lineEncoding: 'mulaw' | 'linear16';
  readonly carrierCallId: string;
  private handlers: TransportHandlers | null = null;
  private readonly endpoint: RtpEndpoint;
  private receiver: RtpReceiver;
  private sender: RtpSender;
  /** When the audio sent so far ends playing at the far side (timers ms). */
  private playedOutAt = 0;
  private readonly marks = new Map<TimerHandle, string>();
  private keyTimer: TimerHandle | undefined;
  private closed = false;
  /** The far side hung up or its media timed out before the session attached. */
  private farEndGone = false;
  private farEndMessage: string | undefined;

  constructor(private readonly o: SipTransportOptions) {
    this.carrierCallId = o.carrierCallId;
    this.sampleRate = o.media.codec.sampleRate;
    // The phone's own μ-law goes to a recogniser that takes μ-law as it came; A-law and G.722 are decoded.
    this.lineEncoding = o.media.codec.name === 'PCMU' ? 'mulaw' : 'linear16';
    this.receiver = this.newReceiver(o.media);
    this.sender = this.newSender(o.media);
    this.endpoint = new RtpEndpoint({
      socket: o.port.socket,
      timers: o.timers,
      mediaTimeoutMs: o.mediaTimeoutMs,
      onPacket: (packet) => this.receiver.receive(packet),
      onMediaTimeout: () => {
        o.onMediaTimeout();
        this.farEnd(
          `No RTP from the far side for ${(o.mediaTimeoutMs ?? MEDIA_TIMEOUT_MS) / 1000} s: the media stopped.`,
        );
      },
    });
    this.endpoint.setRemote(o.media.remote);
    if (o.media.onHold) this.endpoint.holdTimeout();
  }

  get rtpStats(): RtpEndpoint['stats'] {
    return this.endpoint.stats;
  }

  get jitterStats(): RtpReceiver['jitterStats'] {
    return this.receiver.jitterStats;
  }

  attach(handlers: TransportHandlers): void {
    this.handlers = handlers;
    if (this.farEndGone) queueMicrotask(() => handlers.hangup(this.farEndMessage));
  }

  sendAudio(frame: Int16Array): void {
    if (this.closed || this.o.media.direction === 'inactive' || this.o.media.direction === 'recvonly') {
      this.o.onFrameDropped?.();
      return;
    }
    const packet = this.sender.audio(frame);
    if (!packet) return this.o.onFrameDropped?.();
    this.endpoint.send(packet);
    const now = this.o.timers.now();
    this.playedOutAt = Math.max(this.playedOutAt, now) + (frame.length / this.sampleRate) * 1000;
  }

  sendMark(name: string): void {
    if (this.closed) return;
    const handle = this.o.timers.setTimeout(
      () => {
        this.marks.delete(handle);
        this.handlers?.mark(name);
      },
      Math.max(0, this.playedOutAt - this.o.timers.now()),
    );
    this.marks.set(handle, name);
  }

  clear(): void {
    // What was sent is already on the wire; the marks behind it are reported now, as a carrier
    // that drops its queue reports them.
    this.playedOutAt = this.o.timers.now();
    for (const [handle, name] of [...this.marks]) {
      this.o.timers.clearTimeout(handle);
      this.marks.delete(handle);
      this.handlers?.mark(name);
    }
  }

  notify(_notice: SessionNotice): void {
    // A phone shows nothing.
  }

  /**
   * Sends `keys` as RFC 4733 events, one after another; resolves when the last has been sent, or
   * false at once when the far side takes no telephone events.
   */
  sendDigits(keys: string): Promise<boolean> {
    if (this.o.media.telephoneEventType === undefined) return Promise.resolve(false);
    const queue = [...keys];
    return new Promise((resolve) => {
      const nextKey = (): void => {
        const key = queue.shift();
        if (key === undefined || this.closed) return resolve(true);
        const press = this.sender.telephoneEvent(key, KEY_TONE_MS);
        if (!press) return nextKey();
        const tick = (): void => {
          const packet = this.closed ? null : press.next();
          if (!packet) {
            this.keyTimer = this.o.timers.setTimeout(nextKey, KEY_GAP_MS);
            return;
          }
          this.endpoint.send(packet);
          this.keyTimer = this.o.timers.setTimeout(tick, FRAME_MS);
        };
        tick();
      };
      nextKey();
    });
  }

  /** A key the far side pressed, signalled in SIP (INFO) rather than in the RTP stream. */
  keyPressed(key: string): void {
    if (!this.closed) this.handlers?.dtmf(key);
  }

  /** The far side sent BYE (or CANCEL before the session took the line). */
  hangup(): void {
    this.farEnd();
  }

  /** A re-INVITE or UPDATE agreed new media: a new address, codec, or hold. */
  update(media: NegotiatedMedia): void {
    this.endpoint.setRemote(media.remote);
    if (media.onHold) this.endpoint.holdTimeout();
    else this.endpoint.resumeTimeout();
    const o = this.o.media;
    if (
      media.codec !== o.codec ||
      media.payloadType !== o.payloadType ||
      media.telephoneEventType !== o.telephoneEventType
    ) {
      this.receiver.close();
      this.receiver = this.newReceiver(media);
      this.sender = this.newSender(media);
    }
    this.o.media = media;
  }

  close(reason: DisconnectionReason): void {
    if (this.closed) return;
    const byUs = !this.farEndGone;
    this.release();
    if (byUs) this.o.onClose(reason);
  }

  private farEnd(message?: string): void {
    if (this.farEndGone || this.closed) return;
    this.farEndGone = true;
    this.farEndMessage = message;
    this.handlers?.hangup(message);
  }

  private release(): void {
    this.closed = true;
    this.endpoint.close();
    this.receiver.close();
    this.o.timers.clearTimeout(this.keyTimer);
    for (const handle of this.marks.keys()) this.o.timers.clearTimeout(handle);
    this.marks.clear();
    this.o.port.release();
  }

  private newReceiver(media: NegotiatedMedia): RtpReceiver {
    return new RtpReceiver({
      codec: media.codec,
      payloadType: media.payloadType,
      telephoneEventType: media.telephoneEventType,
      timers: this.o.timers,
      onFrame: (frame) => this.handlers?.audio(frame),
      onDigit: (key) => this.handlers?.dtmf(key),
    });
  }

  private newSender(media: NegotiatedMedia): RtpSender {
    return new RtpSender({
      codec: media.codec,
      payloadType: media.payloadType,
      telephoneEventType: media.telephoneEventType,
      ssrc: parseInt(this.o.random(4), 16),
      sequence: parseInt(this.o.random(2), 16),
      timestamp: parseInt(this.o.random(4), 16),
      now: () => this.o.timers.now(),
    });
  }
}
