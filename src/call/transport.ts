// What a call session needs of a wire protocol. Transports (Twilio Media Streams, the browser
// protocol) implement it; they translate to and from these and know nothing of models or records.
import type { MediaRate } from '../audio/pcm.ts';
import type { DisconnectionReason } from '../records/record.ts';

export interface TransportHandlers {
  /**
   * One 20 ms inbound frame at the transport's rate, in arrival order. It may be a view into a buffer other frames
   * share: copy it before transferring its buffer.
   */
  audio(frame: Int16Array): void;
  /** The far side played everything queued before this mark. */
  mark(name: string): void;
  dtmf(digit: string): void;
  /**
   * The far side ended the call (carrier stop, browser hangup, socket closed); `message` says how
   * when the carrier could only tell it was gone (no media), and becomes the record's message.
   */
  hangup(message?: string): void;
}

/** Events a transport may show the far side (the browser does; a phone cannot). */
export type SessionNotice =
  | { type: 'call_started'; call_id: string; agent_name: string }
  | { type: 'transcript'; role: 'user' | 'agent'; text: string; final: boolean; turn: number }
  | { type: 'tool_call'; name: string; arguments: string }
  | { type: 'tool_result'; name: string; successful: boolean; content: string }
  | { type: 'agent_speaking' }
  | { type: 'agent_stopped' }
  | { type: 'latency'; turn: number; e2e_ms: number }
  | { type: 'call_ended'; disconnection_reason: DisconnectionReason };

export interface CallTransport {
  readonly kind: 'twilio' | 'telnyx' | 'signalwire' | 'plivo' | 'vonage' | 'sip' | 'web';
  /**
   * Rate of the 20 ms frames both ways; INTERNAL_SAMPLE_RATE when absent. A phone line stays at
   * its 8 kHz: the engines take it as it is, instead of through a 8→16→8 kHz resampling round trip.
   */
  readonly sampleRate?: MediaRate;
  /**
   * How the caller's audio came over the wire before it was decoded to the frames given here: a
   * recogniser that takes μ-law is sent the phone's μ-law as it was. linear16 when absent.
   */
  readonly lineEncoding?: 'mulaw' | 'linear16';
  /** The carrier's id of the call this connection carries (Twilio's CallSid); absent for a browser. */
  readonly carrierCallId?: string | undefined;
  /** Where inbound audio and control go; set once by the session. */
  attach(handlers: TransportHandlers): void;
  /** One 20 ms agent frame at the transport's rate. */
  sendAudio(frame: Int16Array): void;
  sendMark(name: string): void;
  /** Drop audio the far side has queued (barge-in); it echoes pending marks. */
  clear(): void;
  notify(notice: SessionNotice): void;
  /** The service ends the call: close the media connection. */
  close(reason: DisconnectionReason): void;
}
