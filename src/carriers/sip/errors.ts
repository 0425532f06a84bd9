import { CodedError } from '../../errors.ts';

// SIP carrier errors carry a stable code so callers and tests match on codes, never on text.
export type SipErrorCode =
  /** An SDP body that cannot be read (no audio line, a line out of its grammar, too long). */
  | 'SIP_BAD_SDP'
  /** The offer shares no codec with this side (answered 488 Not Acceptable Here). */
  | 'SIP_NO_COMMON_CODEC'
  /** RTP_PORTS is not `LOW-HIGH` with even bounds inside 1024–65535. */
  | 'SIP_BAD_RTP_PORTS'
  /** Every RTP port of the range is taken. */
  | 'SIP_NO_RTP_PORT'
  /** SIP_LISTEN is not comma-separated `udp:HOST:PORT` / `tcp:HOST:PORT`, one per transport. */
  | 'SIP_BAD_LISTEN';

export class SipError extends CodedError<SipErrorCode> {}
