// Outbound calls through an organization's SIP trunk (issue 37, "Outbound calls"): a call whose call_from is one of
// the organization's trunk numbers is an INVITE to `sip:<call_to>@<outbound.address>` over the trunk's transport,
// placed by the one user agent (user-agent.ts), which answers a 401/407 once with the trunk's outbound username and
// password. How the dial ends decides the call, as the other carriers' reports do (carriers/outcomes.ts):
//
//   180 / 183            the callee rings (logged: a record has no ringing status; it stays `registered`)
//   200                  the call's SipTransport goes to the call manager as an inbound SIP call's does
//   486 / 600            dial_failed, "busy" and the status in the message (Twilio's and Telnyx's busy is the same)
//   no final answer      within RING_TIMEOUT_MS: CANCEL, then dial_no_answer
//   anything else        dial_failed with the SIP status and reason in disconnection_message
//
// Once answered, the agent's hang-up closes the transport (BYE, user-agent.ts) and the callee's BYE closes the session
// as the caller's hang-up. A trunk number of the organization without an outbound side is refused before any record
// is written (checkFrom), so POST /v2/calls answers 400.
//
// Transfers, of calls placed here and of inbound SIP calls (adopt), go through the call's trunk's outbound side (a
// trunk without one refuses them with NoTransferError, and the call ends as a line without transfers does):
//
//   cold   REFER in the call's dialog, Refer-To <sip:<transfer_to>@<outbound.address>> (refer.ts). Accepted (2xx), the
//          line is the far side's to move; its NOTIFY of a 2xx sipfrag → call_transfer, and the session's close sends
//          BYE unless the far side's came first. A failure sipfrag, or no final report within the ring timeout
//          (+REFER_GRACE_MS) → the caller's same line goes back to the session (as a carrier's new stream does) and
//          the model is told. A REFER refused outright throws: the caller stays with the agent.
//   warm   consult: a second INVITE through the trunk, rung and cancelled as a placed call is, whose line goes to the
//          session with the stream secret (the agent says the summary on it); bridge: the two legs' media relayed in
//          the service (bridge.ts says why not REFER with Replaces). The record ends call_transfer at the bridge.
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import type { EgressPolicy } from '../../net/egress.ts';
import type { Logger } from 'pino';
import { ApiError } from '../../errors.ts';
import type { CallTransport } from '../../call/transport.ts';
import {
  NoTransferError,
  type ConsultRequest,
  type DialRequest,
  type DialResult,
  type Dialer,
  type TransferRequest,
} from '../../records/dialer.ts';
import type { SipTrunk } from '../../sip-trunks/schema.ts';
import type { Timers } from '../../timers.ts';
import type { SipTrunkLookup } from '../carrier.ts';
import { bridgeLines, SipLine } from './bridge.ts';
import type { DigestClientCredentials } from './digest.ts';
import type { DialOptions, DialResult as SipDialResult, OutboundDial, SipCall } from './user-agent.ts';
import type { SipPeer } from './wire.ts';

/** What the service does with the end of a dial and a transfer's reports: the calls room's, set once it exists. */
export interface SipDialOutcomes {
  /** The INVITE is out: the record's metadata gains the SIP Call-ID and the trunk, as an inbound SIP call's has. */
  dialing(orgId: string, callId: string, metadata: { sip_call_id: string; sip_trunk_id: string }): Promise<void>;
  /** The callee answered: the call runs on its line. */
  answered(orgId: string, callId: string, line: CallTransport): Promise<void>;
  noAnswer(callId: string): Promise<void>;
  failed(callId: string, message: string): Promise<void>;
  /** A cold transfer's destination answered: the call ends call_transfer. */
  transferAnswered(callId: string): void;
  /** A cold transfer did not connect (`status`: busy, no-answer, failed): the secret for the caller's line back. */
  transferFailed(callId: string, status: string): string | null;
  /** A line for a call under way (the caller back, a warm transfer's second leg), with its secret; false if refused. */
  returnStream(callId: string, secret: string, line: CallTransport): boolean;
  /** A warm transfer's second leg did not connect (`status` as for transferFailed). */
  consultFailed(callId: string, status: string): void;
  /** The call ended while its caller was being transferred. */
  carrierEnded(callId: string): Promise<void>;
}

/** How a dial that did not connect ends the call. */
export type DialEnding = { kind: 'no_answer' } | { kind: 'failed'; message: string };

/**
 * The ending of a dial that was not answered; `rangOut`: this side cancelled it when the ring timeout passed, after
 * the far side had answered provisionally (a trunk that never answered at all is a failure, not a callee's silence).
 */
export function dialEnding(result: Exclude<SipDialResult, { outcome: 'answered' }>, rangOut: boolean): DialEnding {
  if (rangOut) return { kind: 'no_answer' };
  if (result.outcome === 'timeout') return { kind: 'failed', message: 'The SIP trunk never answered the INVITE.' };
  const status = `SIP ${result.status}${result.reason ? ` ${result.reason}` : ''}`;
  if (result.status === 486 || result.status === 600)
    return { kind: 'failed', message: `The callee was busy (${status}).` };
  return { kind: 'failed', message: `The SIP trunk refused the call (${status}).` };
}

/** `host[:port]` (an IPv6 address in brackets) as host and port, 5060 when none is given. */
export function hostPortOf(address: string): { host: string; port: number } {
  const bracketed = /^\[([^\]]+)\](?::(\d+))?$/.exec(address);
  if (bracketed) return { host: bracketed[1]!, port: Number(bracketed[2] ?? 5060) };
  const [host, port] = address.split(':');
  return { host: host!, port: Number(port ?? 5060) };
}

export interface SipDialerOptions {
  trunks: SipTrunkLookup;
  /** Where a call from a number no trunk of the organization holds goes (the carriers after this one). */
  next: Dialer;
  /** The user agent's dial (absent until it listens). */
  dial: (o: DialOptions) => OutboundDial;
  /** The host written into the From URI (SIP_PUBLIC_HOST). */
  publicHost: string;
  ringTimeoutMs: number;
  timers: Timers;
  outcomes: () => SipDialOutcomes;
  log: Logger;
  /** Whether SIP_LISTEN has a UDP listener, which a UDP trunk's INVITE is sent from. */
  udpListening: boolean;
  /** Resolves a trunk's host name; DNS by default. */
  resolveHost?: (host: string) => Promise<string>;
  /**
   * The egress policy (net/egress.ts): a trunk's address is an organization's setting, so the address it resolves to is
   * judged as a tool's or a model's is; a PBX on a private network is opened with EGRESS_ALLOW.
   */
  egress: Pick<EgressPolicy, 'addressRefusal'>;
}

/** How much longer than the ring timeout a REFER's final report may take (the far side's dial rings too). */
export const REFER_GRACE_MS = 5_000;

/** A trunk's outbound side and the address it resolved to. */
interface TrunkRoute {
  trunkId: string;
  outbound: NonNullable<SipTrunk['outbound']>;
  peer: SipPeer;
}

/** How a dial through a trunk ended: answered, or not (with the final SIP status when there was one). */
type RingEnd = { kind: 'answered'; call: SipCall } | { kind: 'ended'; ending: DialEnding; status: number | undefined };

/** An answered SIP call a session holds: what its transfers need. */
interface HeldSipCall {
  orgId: string;
  /** The trunk number the call came in on or went out from: its trunk carries the transfers. */
  trunkNumber: string;
  call: SipCall;
  line: SipLine;
  /** A warm transfer's second leg while it rings. */
  consult?: OutboundDial;
}

/** What a transfer's report (a sipfrag's status) is, in the words the call outcomes take (carriers/outcomes.ts). */
export function transferStatusOf(status: number | undefined): 'busy' | 'no-answer' | 'failed' {
  if (status === 486 || status === 600 || status === 603) return 'busy';
  if (status === 408 || status === 480 || status === 487) return 'no-answer';
  return 'failed';
}

export class SipDialer implements Dialer {
  readonly name = 'sip';
  /** Calls this dialer placed, while they ring. */
  private readonly placed = new Map<string, OutboundDial>();
  /** Answered SIP calls (placed here, or inbound and adopted), by call id. */
  private readonly held = new Map<string, HeldSipCall>();
  /** Warm transfers' answered second legs, by their SIP Call-ID. */
  private readonly legs = new Map<string, SipLine>();

  // The carriers after this one keep their transfers and keys for their own calls.
  readonly sendDigits: Dialer['sendDigits'];

  constructor(private readonly o: SipDialerOptions) {
    const { next } = o;
    const sendDigits = next.sendDigits?.bind(next);
    this.sendDigits =
      sendDigits && (async (request) => sendDigits(this.notPlacedHere(request, 'sent keys by its carrier')));
  }

  /** `request` as it came, for the next carrier; throws for a call this dialer placed. */
  private notPlacedHere<R extends { callId: string }>(request: R, what: string): R {
    if (this.placed.has(request.callId) || this.held.has(request.callId))
      throw new Error(`A call placed through a SIP trunk cannot be ${what}.`);
    return request;
  }

  /** A trunk number is checked against the organization's trunks itself (trunkOf): others are the next carrier's. */
  showsCallerId(to: string): boolean {
    return this.o.next.showsCallerId(to);
  }

  /** A trunk number of the organization that has no outbound side cannot place calls: refused before any record. */
  async checkFrom(orgId: string, from: string): Promise<void> {
    const held = await this.o.trunks.byNumber(from);
    if (!held || held.orgId !== orgId) return this.o.next.checkFrom?.(orgId, from);
    if (!held.trunk.outbound)
      throw new ApiError(
        'BAD_REQUEST',
        `body.call_from: ${from} is on SIP trunk ${held.trunk.sip_trunk_id}, which has no outbound side: give the trunk an outbound {address, transport} to place calls through it`,
      );
  }

  async dial(request: DialRequest): Promise<DialResult> {
    const held = await this.o.trunks.byNumber(request.from);
    if (!held || held.orgId !== request.orgId) return this.o.next.dial(request);
    const route = await this.routeOf(held.trunk);
    if (typeof route === 'string') return { status: 'failed', reason: 'dial_failed', message: route };
    const ringing = this.ring(route, request.to, request.presentationNumber ?? request.from, request.callId);
    this.placed.set(request.callId, ringing.dial);
    // Asked before any outcome of the dial, so the record's later updates keep it.
    await this.o
      .outcomes()
      .dialing(request.orgId, request.callId, {
        sip_call_id: ringing.dial.callId,
        sip_trunk_id: held.trunk.sip_trunk_id,
      })
      .catch((error: unknown) =>
        this.o.log.warn({ err: error, call_id: request.callId }, 'SIP Call-ID not written to the record'),
      );
    void ringing.ended
      .then(async (end) => {
        this.placed.delete(request.callId);
        if (end.kind === 'answered') {
          const line = this.hold(request.callId, request.orgId, request.from, end.call);
          // A callee answering as the ring timeout ran out is the call's: it is taken.
          return this.o.outcomes().answered(request.orgId, request.callId, line);
        }
        if (end.ending.kind === 'no_answer') return this.o.outcomes().noAnswer(request.callId);
        return this.o.outcomes().failed(request.callId, end.ending.message);
      })
      .catch((error: unknown) => {
        this.placed.delete(request.callId);
        this.o.log.error({ err: error, call_id: request.callId }, 'SIP call could not be placed');
        this.held.get(request.callId)?.line.close('error_service');
        return this.o.outcomes().failed(request.callId, 'The service could not place the call through the SIP trunk.');
      });
    return { status: 'dialing', carrierCallId: ringing.dial.callId };
  }

  /**
   * An inbound SIP call admitted on the trunk holding `trunkNumber`: its line, for the session, and its transfers go
   * through that trunk's outbound side.
   */
  adopt(callId: string, orgId: string, trunkNumber: string, call: SipCall): SipLine {
    return this.hold(callId, orgId, trunkNumber, call);
  }

  private hold(callId: string, orgId: string, trunkNumber: string, call: SipCall): SipLine {
    const line = new SipLine(call.transport);
    const entry: HeldSipCall = { orgId, trunkNumber, call, line };
    this.held.set(callId, entry);
    const before = call.onEnded;
    call.onEnded = (how) => {
      if (this.held.get(callId) === entry) this.held.delete(callId);
      // A second leg still ringing for a caller who is gone is given up.
      entry.consult?.cancel();
      before?.(how);
    };
    return line;
  }

  /** The service ended the call: CANCEL while it rings, BYE once answered (a call over, or bridged, is left). */
  async hangUpCall(callId: string): Promise<void> {
    const ringing = this.placed.get(callId);
    if (ringing) return ringing.cancel();
    const held = this.held.get(callId);
    if (!held) return this.o.next.hangUpCall?.(callId);
    if (!held.line.bridged) held.call.hangup();
  }

  /**
   * Cold transfer of a SIP call: REFER in its dialog to `sip:<to>@<trunk outbound address>`. Resolves once the far
   * side accepted it; its NOTIFYs then decide (refer.ts): connected → call_transfer, anything else → the caller's
   * line goes back to the session, as a carrier's failed transfer sends the caller back on a new stream.
   */
  async transfer(request: TransferRequest): Promise<void> {
    const held = this.held.get(request.callId);
    if (!held) {
      if (this.placed.has(request.callId)) throw new Error('A SIP call cannot be transferred before it is answered.');
      if (this.o.next.transfer) return this.o.next.transfer(request);
      throw new NoTransferError(`no carrier can transfer call ${request.callId}`);
    }
    const { outbound } = await this.transferTrunkOf(held);
    const log = this.o.log.child({ call_id: request.callId, sip_call_id: held.call.dialog.callId });
    const referral = held.call.refer({
      referTo: `<${targetUri(request.to, outbound)}>`,
      referredBy: `<sip:${request.from ?? held.trunkNumber}@${this.o.publicHost}>`,
      credentials: credentialsOf(outbound),
      onProgress: (status) => log.info({ status }, 'SIP transfer in progress'),
    });
    const answer = await referral.answer;
    if (!answer.accepted)
      throw new Error(
        `The far side refused the transfer (SIP ${answer.status}${answer.reason ? ` ${answer.reason}` : ''}).`,
      );
    const timer = this.o.timers.setTimeout(
      () => referral.giveUp('no final report within the ring timeout'),
      this.o.ringTimeoutMs + REFER_GRACE_MS,
    );
    void referral.result.then((result) => {
      this.o.timers.clearTimeout(timer);
      log.info({ result }, 'SIP transfer over');
      const outcomes = this.o.outcomes();
      if (result.outcome === 'connected') return outcomes.transferAnswered(request.callId);
      if (result.outcome === 'ended') return void outcomes.carrierEnded(request.callId);
      // The caller never left this side's media: the same line is the session's again.
      const secret = outcomes.transferFailed(request.callId, transferStatusOf(result.status));
      if (!secret || !outcomes.returnStream(request.callId, secret, held.line)) held.line.close('call_transfer');
    });
  }

  /**
   * Warm transfer, first step: a second INVITE through the call's trunk to `to`, rung and cancelled as a placed call
   * is; once answered its line goes to the session with the stream secret, which says the summary on it.
   */
  async consult(request: ConsultRequest): Promise<{ carrierCallId: string }> {
    const held = this.held.get(request.callId);
    if (!held) {
      if (this.o.next.consult && !this.placed.has(request.callId)) return this.o.next.consult(request);
      throw new Error(`no carrier can place a transfer's second leg for call ${request.callId}`);
    }
    const route = await this.routeOf((await this.transferTrunkOf(held)).trunk);
    if (typeof route === 'string') throw new Error(route);
    const ringing = this.ring(route, request.to, request.from ?? held.trunkNumber, request.callId);
    held.consult = ringing.dial;
    const callId = request.callId;
    void ringing.ended
      .then((end) => {
        if (held.consult === ringing.dial) held.consult = undefined;
        const outcomes = this.o.outcomes();
        if (end.kind === 'ended')
          return outcomes.consultFailed(
            callId,
            end.ending.kind === 'no_answer' ? 'no-answer' : transferStatusOf(end.status),
          );
        const leg = new SipLine(end.call.transport);
        const legId = end.call.dialog.callId;
        this.legs.set(legId, leg);
        end.call.onEnded = () => this.legs.delete(legId);
        if (!outcomes.returnStream(callId, request.streamSecret, leg)) leg.close('call_transfer');
      })
      .catch((error: unknown) => {
        this.o.log.error({ err: error, call_id: callId }, 'a SIP transfer’s second leg could not be placed');
        this.o.outcomes().consultFailed(callId, 'failed');
      });
    return { carrierCallId: ringing.dial.callId };
  }

  /** Warm transfer, last step: the caller's media and the second leg's are relayed to each other (bridge.ts). */
  async bridge(request: { callId: string; carrierCallId: string; consultCarrierCallId: string }): Promise<void> {
    const held = this.held.get(request.callId);
    if (!held) {
      if (this.o.next.bridge && !this.placed.has(request.callId)) return this.o.next.bridge(request);
      throw new Error(`no carrier can bridge call ${request.callId}`);
    }
    const leg = this.legs.get(request.consultCarrierCallId);
    if (!leg || held.call.ended) throw new Error('one of the legs to bridge has hung up');
    bridgeLines(held.line, leg);
    this.o.log.info(
      { call_id: request.callId, sip_call_id: held.call.dialog.callId, leg_sip_call_id: request.consultCarrierCallId },
      'SIP transfer bridged in the service',
    );
  }

  /** The service stops: the transfers bridged here (whose media only this service relays) are hung up with BYE. */
  closeBridges(): void {
    const lines = [...[...this.held.values()].map((h) => h.line), ...this.legs.values()];
    for (const line of lines) if (line.bridged) line.take().close('call_transfer');
  }

  /** Dials `to` through a trunk from `caller`: CANCEL once the ring timeout passes. */
  private ring(
    route: TrunkRoute,
    to: string,
    caller: string,
    callId: string,
  ): { dial: OutboundDial; ended: Promise<RingEnd> } {
    let heard = false;
    const dial = this.o.dial({
      uri: `sip:${to}@${route.outbound.address}`,
      from: `sip:${caller}@${this.o.publicHost}`,
      peer: route.peer,
      credentials: credentialsOf(route.outbound),
      onProgress: (status) => {
        heard = true;
        if (status === 180 || status === 183)
          this.o.log.info({ call_id: callId, sip_call_id: dial.callId, status }, 'SIP callee ringing');
      },
    });
    let rangOut = false;
    const ring = this.o.timers.setTimeout(() => {
      rangOut = true;
      dial.cancel();
    }, this.o.ringTimeoutMs);
    const ended = dial.result.then(
      (result): RingEnd => {
        this.o.timers.clearTimeout(ring);
        if (result.outcome === 'answered') return { kind: 'answered', call: result.call };
        this.o.log.info(
          { call_id: callId, sip_call_id: dial.callId, result, rang_out: rangOut },
          'SIP call not answered',
        );
        return {
          kind: 'ended',
          ending: dialEnding(result, rangOut && heard),
          status: result.outcome === 'rejected' ? result.status : undefined,
        };
      },
      (error: unknown) => {
        this.o.timers.clearTimeout(ring);
        throw error;
      },
    );
    return { dial, ended };
  }

  private async trunkOf(held: HeldSipCall): Promise<SipTrunk | undefined> {
    const owned = await this.o.trunks.byNumber(held.trunkNumber);
    return owned && owned.orgId === held.orgId ? owned.trunk : undefined;
  }

  /** The call's trunk, which must have an outbound side: a trunk without one has nowhere to send a transfer. */
  private async transferTrunkOf(
    held: HeldSipCall,
  ): Promise<{ trunk: SipTrunk; outbound: NonNullable<SipTrunk['outbound']> }> {
    const trunk = await this.trunkOf(held);
    if (!trunk?.outbound)
      throw new NoTransferError(
        `SIP trunk ${trunk?.sip_trunk_id ?? `of ${held.trunkNumber}`} has no outbound side to transfer the call through: give it an outbound {address, transport}`,
      );
    return { trunk, outbound: trunk.outbound };
  }

  /** Where a trunk's calls go, or why none can. */
  private async routeOf(trunk: SipTrunk): Promise<TrunkRoute | string> {
    const outbound = trunk.outbound;
    if (!outbound) return `SIP trunk ${trunk.sip_trunk_id} has no outbound side to place the call through.`;
    if (outbound.transport === 'udp' && !this.o.udpListening)
      return `SIP trunk ${trunk.sip_trunk_id} sends over UDP, but SIP_LISTEN has no udp: entry to send from.`;
    const peer = await this.peerOf(outbound);
    if (!peer) return `The address of SIP trunk ${trunk.sip_trunk_id} (${outbound.address}) could not be resolved.`;
    const refused = this.o.egress.addressRefusal(hostPortOf(outbound.address).host, peer.address, peer.port);
    if (refused !== null) {
      this.o.log.warn({ sip_trunk_id: trunk.sip_trunk_id, reason: refused }, 'SIP trunk address refused');
      return `The address of SIP trunk ${trunk.sip_trunk_id} (${outbound.address}) is not reachable from this service: ${refused} (EGRESS_ALLOW opens it).`;
    }
    return { trunkId: trunk.sip_trunk_id, outbound, peer };
  }

  private async peerOf(outbound: NonNullable<SipTrunk['outbound']>): Promise<SipPeer | undefined> {
    const { host, port } = hostPortOf(outbound.address);
    let address = host;
    if (isIP(host) === 0) {
      try {
        address = await (this.o.resolveHost ?? resolveHost)(host);
      } catch {
        return undefined;
      }
    }
    return { transport: outbound.transport, address, port };
  }
}

/** `sip:<number>@<trunk outbound address>`, naming the transport when it is not UDP. */
function targetUri(to: string, outbound: NonNullable<SipTrunk['outbound']>): string {
  return `sip:${to}@${outbound.address}${outbound.transport === 'udp' ? '' : `;transport=${outbound.transport}`}`;
}

function credentialsOf(outbound: NonNullable<SipTrunk['outbound']>): DigestClientCredentials | undefined {
  return outbound.username !== undefined && outbound.password !== undefined
    ? { username: outbound.username, password: outbound.password }
    : undefined;
}

async function resolveHost(host: string): Promise<string> {
  return (await lookup(host)).address;
}
