// The caller's side of one RTP stream: packets of the negotiated codec are decoded and put back in
// order by the jitter buffer, then cut into the 20 ms frames the session takes (a far side may
// send 10 or 30 ms packets); telephone events become keypad digits, once per press. Packets of
// any other payload type (comfort noise, a codec that was not agreed) keep their place in the
// sequence but carry no audio. A new SSRC is a new source (the far side's media moved, RFC 3550
// §8.2): the buffer plays out what it holds and starts over from the new source's numbering.
import { Framer } from '../../audio/framer.ts';
import type { Timers } from '../../timers.ts';
import { JitterBuffer, type JitterBufferOptions } from './jitter-buffer.ts';
import type { RtpPacket } from './rtp-packet.ts';
import type { RtpCodec, RtpCoder } from './rtp-sender.ts';
import { TelephoneEventReceiver } from './telephone-event.ts';

export interface RtpReceiverOptions {
  codec: RtpCodec;
  payloadType?: number | undefined;
  telephoneEventType?: number | undefined;
  timers: Timers;
  jitter?: Omit<JitterBufferOptions, 'timers'>;
  /** One 20 ms frame at the codec's sample rate, in order; `concealed` when made up for a lost packet. */
  onFrame: (frame: Int16Array, concealed: boolean) => void;
  onDigit: (key: string) => void;
}

/** The longest payload decoded (60 ms of G.711 or G.722); anything longer is not a phone's packet. */
const MAX_PAYLOAD = 480;

export class RtpReceiver {
  private readonly buffer: JitterBuffer;
  private readonly framer: Framer;
  private readonly events = new TelephoneEventReceiver();
  private readonly payloadType: number;
  private readonly coder: RtpCoder;
  private ssrc: number | null = null;

  constructor(private readonly o: RtpReceiverOptions) {
    this.payloadType = o.payloadType ?? o.codec.payloadType;
    this.coder = o.codec.coder();
    const frameSamples = o.codec.sampleRate / 50;
    this.framer = new Framer(frameSamples);
    this.buffer = new JitterBuffer(
      (frame, concealed) => {
        for (const out of this.framer.push(frame)) o.onFrame(out, concealed);
      },
      { frameSamples, ...o.jitter, timers: o.timers },
    );
  }

  get jitterStats(): JitterBuffer['stats'] {
    return this.buffer.stats;
  }

  receive(packet: RtpPacket): void {
    if (this.ssrc !== packet.ssrc) {
      if (this.ssrc !== null) this.buffer.restart();
      this.ssrc = packet.ssrc;
    }
    if (packet.payloadType === this.payloadType && packet.payload.length <= MAX_PAYLOAD) {
      this.buffer.push(packet.sequence, this.coder.decode(packet.payload));
      return;
    }
    if (packet.payloadType === this.o.telephoneEventType) {
      const key = this.events.receive(packet);
      if (key) this.o.onDigit(key);
    }
    this.buffer.push(packet.sequence, null);
  }

  close(): void {
    this.buffer.close();
  }
}
