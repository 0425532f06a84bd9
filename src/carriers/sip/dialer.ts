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
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import type { EgressPolicy } from '../../net/egress.ts';
import type { Logger } from 'pino';
import { ApiError } from '../../errors.ts';
import type { DialRequest, DialResult, Dialer } from '../../records/dialer.ts';
import type { SipTrunk } from '../../sip-trunks/schema.ts';
import type { Timers } from '../../timers.ts';
import type { SipTrunkLookup } from '../carrier.ts';
import type { SipTransport } from './transport.ts';
import type { DialOptions, DialResult as SipDialResult, OutboundDial, SipCall } from './user-agent.ts';
import type { SipPeer } from './wire.ts';

/** What the service does with the end of a dial: the calls room's outcomes and manager, as set once it exists. */
export interface SipDialOutcomes {
  /** The INVITE is out: the record's metadata gains the SIP Call-ID and the trunk, as an inbound SIP call's carries them. */
  dialing(orgId: string, callId: string, metadata: { sip_call_id: string; sip_trunk_id: string }): Promise<void>;
  /** The callee answered: the call runs on its transport. */
  answered(orgId: string, callId: string, transport: SipTransport): Promise<void>;
  noAnswer(callId: string): Promise<void>;
  failed(callId: string, message: string): Promise<void>;
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

interface PlacedSipCall {
  dial: OutboundDial;
  call?: SipCall;
}

export class SipDialer implements Dialer {
  readonly name = 'sip';
  private readonly placed = new Map<string, PlacedSipCall>();

  // The carriers after this one keep their transfers and keys for their own calls (the call manager offers a transfer
  // only where the dialer has one, so dropping them here took them from every call once SIP listened). A call placed
  // through a trunk has none of them yet: REFER is not implemented (issue 37).
  readonly transfer: Dialer['transfer'];
  readonly consult: Dialer['consult'];
  readonly bridge: Dialer['bridge'];
  readonly sendDigits: Dialer['sendDigits'];

  constructor(private readonly o: SipDialerOptions) {
    const { next } = o;
    const transfer = next.transfer?.bind(next);
    const consult = next.consult?.bind(next);
    const bridge = next.bridge?.bind(next);
    const sendDigits = next.sendDigits?.bind(next);
    this.transfer =
      transfer &&
      (async (request) => transfer(this.notPlacedHere(request, 'transferred yet (REFER is not implemented)')));
    this.consult =
      consult &&
      (async (request) => consult(this.notPlacedHere(request, 'transferred yet (REFER is not implemented)')));
    this.bridge =
      bridge && (async (request) => bridge(this.notPlacedHere(request, 'transferred yet (REFER is not implemented)')));
    this.sendDigits =
      sendDigits && (async (request) => sendDigits(this.notPlacedHere(request, 'sent keys by its carrier')));
  }

  /** `request` as it came, for the next carrier; throws for a call this dialer placed. */
  private notPlacedHere<R extends { callId: string }>(request: R, what: string): R {
    if (this.placed.has(request.callId)) throw new Error(`A call placed through a SIP trunk cannot be ${what}.`);
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
    const outbound = held.trunk.outbound;
    if (!outbound)
      return {
        status: 'failed',
        reason: 'dial_failed',
        message: `SIP trunk ${held.trunk.sip_trunk_id} has no outbound side to place the call through.`,
      };
    if (outbound.transport === 'udp' && !this.o.udpListening)
      return {
        status: 'failed',
        reason: 'dial_failed',
        message: `SIP trunk ${held.trunk.sip_trunk_id} sends over UDP, but SIP_LISTEN has no udp: entry to send from.`,
      };
    const peer = await this.peerOf(outbound);
    if (!peer)
      return {
        status: 'failed',
        reason: 'dial_failed',
        message: `The address of SIP trunk ${held.trunk.sip_trunk_id} (${outbound.address}) could not be resolved.`,
      };
    const refused = this.o.egress.addressRefusal(hostPortOf(outbound.address).host, peer.address, peer.port);
    if (refused !== null) {
      this.o.log.warn({ sip_trunk_id: held.trunk.sip_trunk_id, reason: refused }, 'SIP trunk address refused');
      return {
        status: 'failed',
        reason: 'dial_failed',
        message: `The address of SIP trunk ${held.trunk.sip_trunk_id} (${outbound.address}) is not reachable from this service: ${refused} (EGRESS_ALLOW opens it).`,
      };
    }
    const caller = request.presentationNumber ?? request.from;
    let heard = false;
    const dial = this.o.dial({
      uri: `sip:${request.to}@${outbound.address}`,
      from: `sip:${caller}@${this.o.publicHost}`,
      peer,
      credentials:
        outbound.username !== undefined && outbound.password !== undefined
          ? { username: outbound.username, password: outbound.password }
          : undefined,
      onProgress: (status) => {
        heard = true;
        if (status === 180 || status === 183)
          this.o.log.info({ call_id: request.callId, sip_call_id: dial.callId, status }, 'SIP callee ringing');
      },
    });
    const placed: PlacedSipCall = { dial };
    this.placed.set(request.callId, placed);
    // Asked before any outcome of the dial, so the record's later updates keep it.
    await this.o
      .outcomes()
      .dialing(request.orgId, request.callId, { sip_call_id: dial.callId, sip_trunk_id: held.trunk.sip_trunk_id })
      .catch((error: unknown) =>
        this.o.log.warn({ err: error, call_id: request.callId }, 'SIP Call-ID not written to the record'),
      );
    let rangOut = false;
    const ring = this.o.timers.setTimeout(() => {
      rangOut = true;
      dial.cancel();
    }, this.o.ringTimeoutMs);
    void dial.result
      .then(async (result) => {
        this.o.timers.clearTimeout(ring);
        if (result.outcome === 'answered') {
          placed.call = result.call;
          result.call.onEnded = () => this.placed.delete(request.callId);
          // A callee answering as the ring timeout ran out is the call's: it is taken.
          return this.o.outcomes().answered(request.orgId, request.callId, result.call.transport);
        }
        this.placed.delete(request.callId);
        const ending = dialEnding(result, rangOut && heard);
        this.o.log.info(
          { call_id: request.callId, sip_call_id: dial.callId, result, rang_out: rangOut },
          'SIP call not answered',
        );
        if (ending.kind === 'no_answer') return this.o.outcomes().noAnswer(request.callId);
        return this.o.outcomes().failed(request.callId, ending.message);
      })
      .catch((error: unknown) => {
        this.o.timers.clearTimeout(ring);
        this.placed.delete(request.callId);
        this.o.log.error({ err: error, call_id: request.callId }, 'SIP call could not be placed');
        placed.call?.transport.close('error_service');
        return this.o.outcomes().failed(request.callId, 'The service could not place the call through the SIP trunk.');
      });
    return { status: 'dialing', carrierCallId: dial.callId };
  }

  /** The service ended the call: CANCEL while it rings, BYE once answered (a call already over is left). */
  async hangUpCall(callId: string): Promise<void> {
    const placed = this.placed.get(callId);
    if (!placed) return this.o.next.hangUpCall?.(callId);
    if (placed.call) placed.call.hangup();
    else placed.dial.cancel();
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

async function resolveHost(host: string): Promise<string> {
  return (await lookup(host)).address;
}
