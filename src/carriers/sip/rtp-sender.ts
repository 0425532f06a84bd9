// The agent's side of one RTP stream: 20 ms PCM frames become G.711 or G.722 packets, and keypad presses
// become telephone-event packets, on one SSRC with one sequence and one timestamp clock (RFC 3550
// §5.1). Timestamps follow the media clock: frames sent back to back advance it by one frame
// each; after a pause (the agent was silent and nothing was sent) it jumps by the time that
// passed, and the first packet after the pause carries the marker, so the far side's jitter
// buffer starts a new talkspurt instead of playing the pause as loss.
import { aLawDecode, aLawEncode, muLawDecode, muLawEncode } from '../../audio/g711.ts';
import { existsSync } from 'node:fs';
import { G722_ADDON_PATH, g722Decoder, g722Encoder } from '../../audio/g722.ts';
import { writeRtp } from './rtp-packet.ts';
import { eventOfKey, telephoneEventPayloads } from './telephone-event.ts';

/** One direction of one stream's coding: G.711 keeps no state, G.722 carries its ADPCM state between packets. */
export interface RtpCoder {
  encode(pcm: Int16Array, out?: Uint8Array): Uint8Array;
  decode(payload: Uint8Array, out?: Int16Array): Int16Array;
}

/** An audio codec of RTP/AVP with a static payload type (RFC 3551 §6). */
export interface RtpCodec {
  readonly name: 'PCMU' | 'PCMA' | 'G722';
  readonly payloadType: 0 | 8 | 9;
  /**
   * The rate written in SDP and counted by RTP timestamps: 8000 for G.722 too, though its audio is
   * 16 kHz (RFC 3551 §4.5.2 keeps the number G.722's first RTP profile wrote), so its timestamp
   * advances 160 per 20 ms packet as G.711's does.
   */
  readonly clockRate: 8000;
  /** The rate of the audio the codec carries: the call's frames are at this rate. */
  readonly sampleRate: 8000 | 16000;
  /** A coder for one direction of one stream. */
  coder(): RtpCoder;
}

/** G.711 at 8 kHz: stateless, so one object codes every stream. */
export interface G711Codec extends RtpCodec, RtpCoder {
  readonly name: 'PCMU' | 'PCMA';
  readonly payloadType: 0 | 8;
  readonly sampleRate: 8000;
}

export const PCMU: G711Codec = {
  name: 'PCMU',
  payloadType: 0,
  clockRate: 8000,
  sampleRate: 8000,
  encode: (pcm, out) => muLawEncode(pcm, out),
  decode: (payload, out) => muLawDecode(payload, out),
  coder: () => PCMU,
};

export const PCMA: G711Codec = {
  name: 'PCMA',
  payloadType: 8,
  clockRate: 8000,
  sampleRate: 8000,
  encode: (pcm, out) => aLawEncode(pcm, out),
  decode: (payload, out) => aLawDecode(payload, out),
  coder: () => PCMA,
};

/** G.722: 16 kHz audio in G.711's 64 kbit/s (160 bytes per 20 ms), through audio/g722.ts. */
export const G722: RtpCodec = {
  name: 'G722',
  payloadType: 9,
  clockRate: 8000,
  sampleRate: 16000,
  coder: () => {
    // Each side is made when first used: a sender never decodes, a receiver never encodes.
    let encoder: ReturnType<typeof g722Encoder> | undefined;
    let decoder: ReturnType<typeof g722Decoder> | undefined;
    return {
      encode: (pcm) => (encoder ??= g722Encoder()).encode(pcm),
      decode: (payload) => (decoder ??= g722Decoder()).decode(payload),
    };
  },
};

/**
 * The codecs this side offers and accepts, wideband first: G.722 only where its addon is built
 * (the set-up builds it), so a missing addon means narrowband calls rather than failing ones.
 */
export const RTP_CODECS: readonly RtpCodec[] = existsSync(G722_ADDON_PATH) ? [G722, PCMU, PCMA] : [PCMU, PCMA];

/** RTP timestamp units of one 20 ms packet (the clock rate is 8000 for every codec here). */
export const PACKET_SAMPLES = 160;
const PACKET_MS = 20;

export interface RtpSenderOptions {
  codec: RtpCodec;
  /** The codec's payload type on this stream; its static one when absent. */
  payloadType?: number | undefined;
  /** The payload type the answer gave telephone-event; absent when the far side takes none. */
  telephoneEventType?: number | undefined;
  /** Random per stream (RFC 3550 §3: SSRC, first sequence number and first timestamp). */
  ssrc: number;
  sequence: number;
  timestamp: number;
  /** Milliseconds, monotonic (src/timers.ts `now`). */
  now: () => number;
}

export class RtpSender {
  private sequence: number;
  /** The timestamp of the next packet sent back to back. */
  private timestamp: number;
  /** When the media clock stood at `timestamp` (ms); null before the first packet. */
  private clockAt: number | null = null;
  private readonly encoded = new Uint8Array(PACKET_SAMPLES);
  private readonly coder: RtpCoder;
  private inEvent = false;

  constructor(private readonly o: RtpSenderOptions) {
    this.coder = o.codec.coder();
    this.sequence = o.sequence & 0xffff;
    this.timestamp = o.timestamp >>> 0;
  }

  /** Whether a telephone event is being sent: audio waits until it ends (§2.5.1.2). */
  get sendingEvent(): boolean {
    return this.inEvent;
  }

  /**
   * The packet carrying one 20 ms frame at the codec's sample rate, or null while a telephone event is being sent
   * (the frame is dropped: the far side is playing the key's tone).
   */
  audio(frame: Int16Array): Buffer | null {
    if (this.inEvent) return null;
    const marker = this.catchUp();
    const payload = this.coder.encode(frame, this.encoded.length >= frame.length ? this.encoded : undefined);
    const packet = this.packet(this.o.payloadType ?? this.o.codec.payloadType, marker, this.timestamp, payload);
    // In timestamp units, which for G.722 are half its samples.
    this.advance((frame.length * this.o.codec.clockRate) / this.o.codec.sampleRate);
    return packet;
  }

  /**
   * The packets of one key press, to be sent one per 20 ms in order (`next()` returns null after
   * the last); null when `key` is not a keypad key or the far side takes no telephone events.
   * Audio frames given meanwhile are dropped; the media clock resumes after the event.
   */
  telephoneEvent(key: string, durationMs: number): { next(): Buffer | null } | null {
    const event = eventOfKey(key);
    const type = this.o.telephoneEventType;
    if (event === null || type === undefined) return null;
    const samples = Math.round((durationMs * this.o.codec.clockRate) / 1000);
    const payloads = telephoneEventPayloads(event, samples, { packetSamples: PACKET_SAMPLES });
    this.catchUp();
    const start = this.timestamp;
    this.inEvent = true;
    let index = 0;
    return {
      next: () => {
        const step = payloads[index++];
        if (!step) return null;
        const packet = this.packet(type, step.marker, start, step.payload);
        // The event took the clock for one packet time per packet; its copies of the end packet too.
        this.advance(PACKET_SAMPLES);
        if (index === payloads.length) this.inEvent = false;
        return packet;
      },
    };
  }

  /** Moves the media clock up to the wall clock after a pause; true when it jumped (a new talkspurt). */
  private catchUp(): boolean {
    const now = this.o.now();
    if (this.clockAt === null) {
      this.clockAt = now;
      return true;
    }
    const behind = Math.floor((now - this.clockAt) / PACKET_MS);
    if (behind <= 0) return false;
    this.timestamp = (this.timestamp + behind * PACKET_SAMPLES) >>> 0;
    this.clockAt += behind * PACKET_MS;
    return true;
  }

  private advance(samples: number): void {
    this.timestamp = (this.timestamp + samples) >>> 0;
    this.clockAt = (this.clockAt ?? this.o.now()) + (samples / this.o.codec.clockRate) * 1000;
  }

  private packet(payloadType: number, marker: boolean, timestamp: number, payload: Uint8Array): Buffer {
    const packet = writeRtp({ payloadType, marker, sequence: this.sequence, timestamp, ssrc: this.o.ssrc }, payload);
    this.sequence = (this.sequence + 1) & 0xffff;
    return packet;
  }
}
