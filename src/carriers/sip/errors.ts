import { CodedError } from '../../errors.ts';

// SIP carrier errors carry a stable code so callers and tests match on codes, never on text.
export type SipErrorCode =
  /** An SDP body that cannot be read (no audio line, a line out of its grammar, too long). */
  | 'SIP_BAD_SDP'
  /** The offer shares no codec with this side (answered 488 Not Acceptable Here). */
  | 'SIP_NO_COMMON_CODEC'
  /** Every RTP port of the range is taken. */
  | 'SIP_NO_RTP_PORT';

export class SipError extends CodedError<SipErrorCode> {}
