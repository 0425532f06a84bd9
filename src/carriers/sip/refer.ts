// A cold transfer of a SIP call (issue 37): this side sends REFER inside the call's dialog and
// follows the far side's attempt through the NOTIFYs of the implicit subscription REFER makes. The
// shapes relied on (RFC 3515, the REFER method; RFC 4488, suppressing its subscription):
//
//   - "A REFER request MUST contain exactly one Refer-To header field value"; REFERs inside an existing
//     dialog follow its route set. Referred-By names who asked (RFC 3892's header, carried as written).
//   - The recipient answers 202 Accepted (a 2xx: 200 is taken too) and then reports with NOTIFY, in
//     the same dialog, `Event: refer` (with `;id=<the REFER's CSeq number>`), `Subscription-State`
//     `active` or `terminated`, and a body of type `message/sipfrag` whose first line is the status
//     line of the referenced INVITE: `SIP/2.0 100 Trying` while pending, `SIP/2.0 200 OK` if the
//     reference succeeded, a failure status (`SIP/2.0 486 Busy Here`, `SIP/2.0 503 Service
//     Unavailable`, `SIP/2.0 603 Declined`) if it failed. Each NOTIFY is answered 200.
//   - A NOTIFY with `Subscription-State: terminated` and no final status, or a failure status, is a
//     failed reference. A NOTIFY for no REFER this side has under way is answered 481, which ends the
//     notifier's subscription.
//   - RFC 4488: a 2xx to REFER carrying `Refer-Sub: false` says no NOTIFY will come. This side never
//     asks for that, but a recipient that answers so is taken at its word: the call ending by its
//     BYE is then the transfer having gone through.
//   - A 401/407 to the REFER is answered once with the trunk's outbound credentials, as an INVITE's is.
//
// The outcome is what the dialer (dialer.ts) reports: connected → call_transfer; failed → the
// caller stays with the agent; ended → the caller hung up while being transferred.
import { answerDigestChallenge, type DigestClientCredentials } from './digest.ts';
import type { SipDialog } from './dialog.ts';
import { header, headerFields, type SipHeader, type SipRequest, type SipResponse } from './message.ts';
import type { ClientTransactionHandlers } from './transactions.ts';

/** How the far side answered the REFER itself. */
export type ReferAnswer =
  /** 2xx; `subscribed`: NOTIFYs will follow (false after `Refer-Sub: false`). */
  { accepted: true; subscribed: boolean } | { accepted: false; status: number; reason: string };

/** How the referenced call went. */
export type ReferResult =
  | { outcome: 'connected' }
  /** `status`: the sipfrag's, when one said why. */
  | { outcome: 'failed'; status: number | undefined; reason: string }
  /** The call ended (BYE either way) before any final report. */
  | { outcome: 'ended' };

export interface ReferOptions {
  /** The Refer-To value (`<sip:+15550001@trunk.example>`). */
  referTo: string;
  /** The Referred-By value (`<sip:+15550002@this-host>`). */
  referredBy: string;
  /** Answers a 401/407 to the REFER once with these. */
  credentials?: DigestClientCredentials | undefined;
  /** Each provisional sipfrag (100 Trying, 180 Ringing): logged by the caller. */
  onProgress?: (status: number) => void;
}

/** The status line of a message/sipfrag body (`SIP/2.0 200 OK`); undefined when it is not one. */
export function sipfragStatus(body: string): { status: number; reason: string } | undefined {
  const match = /^\s*SIP\/2\.0\s+(\d{3})(?:[ \t]+([^\r\n]*))?/i.exec(body);
  return match ? { status: Number(match[1]), reason: (match[2] ?? '').trim() } : undefined;
}

/** The event package of an Event value (`refer;id=93809824` → `refer`). */
function eventPackage(value: string | undefined): string | undefined {
  return value?.split(';')[0]?.trim().toLowerCase();
}

/** One REFER under way in a call's dialog, from the request to its last NOTIFY. */
export class ReferTransfer {
  readonly answer: Promise<ReferAnswer>;
  readonly result: Promise<ReferResult>;
  private settleAnswer!: (answer: ReferAnswer) => void;
  private settleResult!: (result: ReferResult) => void;
  private done = false;
  private subscribed = true;

  constructor(
    private readonly dialog: SipDialog,
    private readonly send: (request: SipRequest, handlers: ClientTransactionHandlers) => void,
    private readonly cnonce: () => string,
    private readonly o: ReferOptions,
  ) {
    this.answer = new Promise((resolve) => (this.settleAnswer = resolve));
    this.result = new Promise((resolve) => (this.settleResult = resolve));
    this.sendRefer([], false);
  }

  /** Whether the outcome is still to come (a NOTIFY for it is expected). */
  get pending(): boolean {
    return !this.done;
  }

  /** A NOTIFY in the call's dialog: the status to answer it with. */
  notified(request: SipRequest): [number, string] {
    if (eventPackage(header(request, 'event')) !== 'refer') return [489, 'Bad Event'];
    if (this.done) return [481, 'Subscription Does Not Exist'];
    const frag = sipfragStatus(request.body);
    const terminated = /^\s*terminated\b/i.test(header(request, 'subscription-state') ?? '');
    if (frag && frag.status < 200) {
      this.o.onProgress?.(frag.status);
      if (terminated) this.finish({ outcome: 'failed', status: undefined, reason: 'the transfer ended unreported' });
    } else if (frag && frag.status < 300) this.finish({ outcome: 'connected' });
    else if (frag) this.finish({ outcome: 'failed', status: frag.status, reason: frag.reason });
    else if (terminated) this.finish({ outcome: 'failed', status: undefined, reason: 'the transfer ended unreported' });
    return [200, 'OK'];
  }

  /** The call ended: without a report that is the caller gone, unless no report was ever to come (Refer-Sub: false). */
  callEnded(how: 'local' | 'remote'): void {
    if (!this.subscribed && how === 'remote') return this.finish({ outcome: 'connected' });
    this.finish({ outcome: 'ended' });
  }

  /** No final report in time: the transfer is taken as unanswered (408), and later NOTIFYs are answered 481. */
  giveUp(reason: string): void {
    this.finish({ outcome: 'failed', status: 408, reason });
  }

  private finish(result: ReferResult): void {
    if (this.done) return;
    this.done = true;
    this.settleResult(result);
  }

  private sendRefer(extra: SipHeader[], challenged: boolean): void {
    const request = this.dialog.request('REFER', {
      headers: [
        { name: 'refer-to', value: this.o.referTo },
        { name: 'referred-by', value: this.o.referredBy },
        ...extra,
      ],
    });
    this.send(request, {
      onTimeout: () => this.refused({ accepted: false, status: 408, reason: 'no answer to the REFER' }),
      onResponse: (response) => this.answered(request, response, challenged),
    });
  }

  private answered(request: SipRequest, response: SipResponse, challenged: boolean): void {
    if (response.status < 200) return;
    if (response.status < 300) {
      this.subscribed = !/^\s*false\b/i.test(header(response, 'refer-sub') ?? '');
      return this.settleAnswer({ accepted: true, subscribed: this.subscribed });
    }
    const challenge = response.status === 401 || response.status === 407;
    if (challenge && this.o.credentials && !challenged) {
      const authorization = answerDigestChallenge(
        headerFields(response, response.status === 401 ? 'www-authenticate' : 'proxy-authenticate'),
        { method: 'REFER', uri: request.uri },
        this.o.credentials,
        { cnonce: this.cnonce() },
      );
      if (authorization) {
        const name = response.status === 401 ? 'authorization' : 'proxy-authorization';
        return this.sendRefer([{ name, value: authorization }], true);
      }
    }
    this.refused({ accepted: false, status: response.status, reason: response.reason });
  }

  private refused(answer: ReferAnswer & { accepted: false }): void {
    this.settleAnswer(answer);
    this.finish({ outcome: 'failed', status: answer.status, reason: answer.reason });
  }
}
