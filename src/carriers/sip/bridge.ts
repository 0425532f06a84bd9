// A warm transfer's bridge for SIP calls (issue 37), done in the service's media path: the caller's
// call and the second leg (an INVITE through the same trunk) stay this service's two dialogs, and
// each leg's audio is played into the other, decoded from one leg's codec and encoded in the
// other's by the legs' own transports, as are the keys pressed. Chosen over REFER with Replaces
// because it works with any trunk: a Replaces header names a dialog, and a carrier's trunk is
// usually a back-to-back agent whose far-side dialogs have other identifiers, so the INVITE with
// Replaces it would have to route is refused or not understood. What it costs: the service stays in
// the media path, holding both RTP ports, until either side hangs up; that side's BYE (or its media
// timing out) hangs the other up with BYE. The call's record ends call_transfer at the bridge.
import type { CallTransport, SessionNotice, TransportHandlers } from '../../call/transport.ts';
import type { DisconnectionReason } from '../../records/record.ts';
import type { SipTransport } from './transport.ts';

/**
 * A SIP call's media as the session holds it: its SipTransport until a bridge takes it, after which
 * nothing the session does reaches it (not even its close, which would send BYE).
 */
export class SipLine implements CallTransport {
  readonly kind = 'sip' as const;
  readonly sampleRate: SipTransport['sampleRate'];
  readonly lineEncoding: SipTransport['lineEncoding'];
  readonly carrierCallId: string;
  private taken = false;

  constructor(private readonly transport: SipTransport) {
    this.sampleRate = transport.sampleRate;
    this.lineEncoding = transport.lineEncoding;
    this.carrierCallId = transport.carrierCallId;
  }

  /** Whether a bridge has the media. */
  get bridged(): boolean {
    return this.taken;
  }

  attach(handlers: TransportHandlers): void {
    if (!this.taken) this.transport.attach(handlers);
  }

  sendAudio(frame: Int16Array): void {
    if (!this.taken) this.transport.sendAudio(frame);
  }

  sendMark(name: string): void {
    if (!this.taken) this.transport.sendMark(name);
  }

  clear(): void {
    if (!this.taken) this.transport.clear();
  }

  notify(notice: SessionNotice): void {
    if (!this.taken) this.transport.notify(notice);
  }

  close(reason: DisconnectionReason): void {
    if (!this.taken) this.transport.close(reason);
  }

  /** The bridge takes the media from the session. */
  take(): SipTransport {
    this.taken = true;
    return this.transport;
  }
}

/** Joins two legs: each one's audio and keys go to the other; either hanging up hangs the other up. */
export function bridgeLines(a: SipLine, b: SipLine): void {
  const one = a.take();
  const other = b.take();
  const join = (from: SipTransport, to: SipTransport): void =>
    from.attach({
      audio(frame) {
        to.sendAudio(frame);
      },
      mark() {},
      dtmf(key) {
        void to.sendDigits(key);
      },
      hangup() {
        // The leg that hung up is released (no BYE: it is gone); the other gets BYE.
        from.close('call_transfer');
        to.close('call_transfer');
      },
    });
  join(one, other);
  join(other, one);
}
