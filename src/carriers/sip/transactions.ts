// SIP transactions (RFC 3261 §17, with RFC 6026's Accepted states for a 2xx to INVITE): the
// layer that makes a request and its responses reliable over UDP and matches retransmissions, so
// the user agent above sees each request once and each response once. All four kinds are here:
//
// - INVITE server: 100 Trying at once; provisional and final responses from the user agent; a
//   retransmitted INVITE gets the last response again. A non-2xx final is retransmitted over UDP
//   on Timer G (T1 doubling to T2) until its ACK, given up after Timer H (64·T1); after the ACK
//   Timer I (T4 over UDP) absorbs late ACKs. A 2xx is retransmitted (T1 doubling to T2, over
//   either transport, since a proxy on the path may use UDP) until the ACK the far side sends
//   end-to-end with a new branch arrives, matched by Call-ID and CSeq; without one in 64·T1 the
//   user agent is told, and ends the call with a BYE (§13.3.1.4).
// - non-INVITE server: the final response is kept for Timer J (64·T1 over UDP) and sent again
//   for each retransmitted request.
// - INVITE client: Timer A (T1 doubling) retransmits over UDP until a response, Timer B (64·T1)
//   gives up; a non-2xx final is ACKed inside the transaction (same branch) and that ACK resent
//   for each retransmitted final during Timer D (32 s over UDP); a 2xx ends the transaction for
//   the user agent, which ACKs it end-to-end; Timer M (64·T1) passes its retransmissions up.
//   CANCEL goes once a provisional response has come (§9.1), and 64·T1 after it without a final
//   response the transaction gives up.
// - non-INVITE client: Timer E (T1 doubling to T2, then T2 once a provisional came) over UDP,
//   Timer F (64·T1) gives up, Timer K (T4 over UDP) absorbs retransmitted responses.
//
// Matching (§17.1.3, §17.2.3): a response by its top Via branch and CSeq method; a request by its
// top Via branch, sent-by and method, an ACK matching its INVITE. A request without an RFC 3261
// branch (z9hG4bK) cannot be matched that way and is answered 400. CANCEL is answered here: 200
// and 487 to its INVITE when that is still ringing, 481 when there is no such INVITE.
// Timers run on src/timers.ts, so the retransmission schedule is tested exactly.
import type { RandomHex } from '../../clock.ts';
import type { TimerHandle, Timers } from '../../timers.ts';
import {
  header,
  headerValues,
  responseTo,
  type SipHeader,
  type SipMessage,
  type SipRequest,
  type SipResponse,
} from './message.ts';
import type { SipPeer, SipTransportName, SipWire } from './wire.ts';

export interface SipTimerValues {
  /** Round-trip estimate, 500 ms. */
  t1: number;
  /** Longest retransmission interval for non-INVITE requests and INVITE responses, 4 s. */
  t2: number;
  /** Longest time a message stays in the network, 5 s. */
  t4: number;
}

export const SIP_TIMERS: SipTimerValues = { t1: 500, t2: 4000, t4: 5000 };

/** RFC 3261's branch prefix: a branch that starts with it is unique per transaction. */
export const BRANCH_COOKIE = 'z9hG4bK';

/** Timer D for an INVITE client over UDP (at least 32 s, §17.1.1.2). */
const TIMER_D_MS = 32_000;

export function newBranch(random: RandomHex): string {
  return `${BRANCH_COOKIE}${random(10)}`;
}

export function topVia(message: Pick<SipMessage, 'headers'>): string | undefined {
  return headerValues(message, 'via')[0];
}

export function viaBranch(via: string): string | undefined {
  return /;\s*branch\s*=\s*([^;,\s]+)/i.exec(via)?.[1];
}

/** `host:port` of a Via value (`SIP/2.0/UDP host:port;params`). */
export function viaSentBy(via: string): string {
  return (/^\s*SIP\s*\/\s*2\.0\s*\/\s*\S+\s+([^;\s]+)/i.exec(via)?.[1] ?? '').toLowerCase();
}

export function cseqOf(message: Pick<SipMessage, 'headers'>): { number: number; method: string } | undefined {
  const match = /^(\d{1,10})\s+(\S+)$/.exec(header(message, 'cseq') ?? '');
  return match ? { number: Number(match[1]), method: match[2]! } : undefined;
}

/** The tag parameter of a From or To value. */
export function tagOf(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  // Parameters after the closing `>` (or after the URI when there are no brackets).
  const close = value.lastIndexOf('>');
  return /;\s*tag\s*=\s*([^;\s]+)/i.exec(close === -1 ? value : value.slice(close))?.[1];
}

interface Context {
  wire: SipWire;
  timers: Timers;
  values: SipTimerValues;
  random: RandomHex;
}

abstract class Transaction {
  protected readonly handles = new Set<TimerHandle>();
  terminated = false;

  constructor(
    protected readonly ctx: Context,
    readonly peer: SipPeer,
    private readonly onTerminated: () => void,
  ) {}

  protected get reliable(): boolean {
    return this.peer.transport !== 'udp';
  }

  protected after(ms: number, callback: () => void): TimerHandle {
    const handle = this.ctx.timers.setTimeout(() => {
      this.handles.delete(handle);
      if (!this.terminated) callback();
    }, ms);
    this.handles.add(handle);
    return handle;
  }

  protected cancelTimer(handle: TimerHandle | undefined): void {
    if (!handle) return;
    this.ctx.timers.clearTimeout(handle);
    this.handles.delete(handle);
  }

  protected send(message: SipMessage): void {
    this.ctx.wire.send(message, this.peer);
  }

  /** Ends at once, or after `ms` when a timer keeps absorbing retransmissions (0 over TCP). */
  protected terminateAfter(ms: number): void {
    if (ms <= 0) this.terminate();
    else this.after(ms, () => this.terminate());
  }

  terminate(): void {
    if (this.terminated) return;
    this.terminated = true;
    for (const handle of this.handles) this.ctx.timers.clearTimeout(handle);
    this.handles.clear();
    this.onTerminated();
  }
}

export interface ResponseOptions {
  headers?: SipHeader[];
  body?: string;
}

abstract class ServerTransaction extends Transaction {
  /** The To tag of this side's responses (the dialog's local tag when the request makes one). */
  readonly toTag: string;

  constructor(
    ctx: Context,
    peer: SipPeer,
    onTerminated: () => void,
    readonly request: SipRequest,
  ) {
    super(ctx, peer, onTerminated);
    this.toTag = tagOf(header(request, 'to')) ?? ctx.random(8);
  }

  protected build(status: number, reason: string, options: ResponseOptions): SipResponse {
    return responseTo(this.request, status, reason, { ...options, toTag: status === 100 ? undefined : this.toTag });
  }

  abstract respond(status: number, reason: string, options?: ResponseOptions): void;
  abstract retransmitted(request: SipRequest): void;
}

export interface InviteServerEvents {
  /** The ACK for this side's 2xx (end-to-end, its own branch). */
  onAck?: (ack: SipRequest) => void;
  /** No ACK for the 2xx within 64·T1: the call should be ended with a BYE. */
  onAckTimeout?: () => void;
  /** The caller cancelled; 487 has been sent. */
  onCancel?: () => void;
}

export class InviteServerTransaction extends ServerTransaction {
  readonly method = 'INVITE';
  state: 'proceeding' | 'completed' | 'confirmed' | 'accepted' | 'terminated' = 'proceeding';
  events: InviteServerEvents = {};
  private last: SipResponse;
  private retransmit: TimerHandle | undefined;

  constructor(
    ctx: Context,
    peer: SipPeer,
    onTerminated: () => void,
    request: SipRequest,
    /** Called when a 2xx goes out: from then the ACK is found by Call-ID and CSeq. */
    private readonly onAccepted: (tx: InviteServerTransaction) => void,
  ) {
    super(ctx, peer, onTerminated, request);
    this.last = this.build(100, 'Trying', {});
    this.send(this.last);
  }

  respond(status: number, reason: string, options: ResponseOptions = {}): void {
    if (this.state !== 'proceeding') return;
    const response = this.build(status, reason, options);
    this.last = response;
    this.send(response);
    const { t1, t2 } = this.ctx.values;
    if (status < 200) return;
    if (status < 300) {
      this.state = 'accepted';
      this.onAccepted(this);
      this.resendUntilAck(t1, t2);
      this.after(64 * t1, () => {
        if (this.state === 'accepted' && this.retransmit) this.events.onAckTimeout?.();
        this.end();
      });
      return;
    }
    this.state = 'completed';
    if (!this.reliable) this.resendUntilAck(t1, t2);
    this.after(64 * t1, () => this.end()); // Timer H
  }

  private resendUntilAck(interval: number, cap: number): void {
    this.retransmit = this.after(interval, () => {
      this.send(this.last);
      this.resendUntilAck(Math.min(2 * interval, cap), cap);
    });
  }

  retransmitted(request: SipRequest): void {
    if (request.method === 'ACK') {
      // Some user agents ACK a 2xx on the INVITE's own branch: it is still that 2xx's ACK.
      if (this.state === 'accepted') return this.acked(request);
      if (this.state !== 'completed') return;
      this.state = 'confirmed';
      this.cancelTimer(this.retransmit);
      this.retransmit = undefined;
      this.terminateAfter(this.reliable ? 0 : this.ctx.values.t4); // Timer I
      return;
    }
    if (this.state === 'proceeding' || this.state === 'completed') this.send(this.last);
  }

  /** The end-to-end ACK of this side's 2xx. */
  acked(ack: SipRequest): void {
    if (this.state !== 'accepted' || !this.retransmit) return;
    this.cancelTimer(this.retransmit);
    this.retransmit = undefined;
    this.events.onAck?.(ack);
  }

  /** A CANCEL for this INVITE: 487 while it rings. */
  cancelled(): boolean {
    if (this.state !== 'proceeding') return false;
    this.respond(487, 'Request Terminated');
    this.events.onCancel?.();
    return true;
  }

  private end(): void {
    this.state = 'terminated';
    this.terminate();
  }
}

export class NonInviteServerTransaction extends ServerTransaction {
  state: 'trying' | 'proceeding' | 'completed' = 'trying';
  private last: SipResponse | undefined;

  get method(): string {
    return this.request.method;
  }

  respond(status: number, reason: string, options: ResponseOptions = {}): void {
    if (this.state === 'completed') return;
    this.last = this.build(status, reason, options);
    this.send(this.last);
    if (status < 200) {
      this.state = 'proceeding';
      return;
    }
    this.state = 'completed';
    this.terminateAfter(this.reliable ? 0 : 64 * this.ctx.values.t1); // Timer J
  }

  retransmitted(): void {
    if (this.last) this.send(this.last);
  }
}

export type SipServerTransaction = InviteServerTransaction | NonInviteServerTransaction;

export interface ClientTransactionHandlers {
  /** Each distinct response (provisional and final; a 2xx to INVITE again for each retransmission). */
  onResponse: (response: SipResponse) => void;
  /** No final response in time (Timer B or F, or 64·T1 after a CANCEL). */
  onTimeout: () => void;
}

export class InviteClientTransaction extends Transaction {
  state: 'calling' | 'proceeding' | 'completed' | 'accepted' | 'terminated' = 'calling';
  private timerA: TimerHandle | undefined;
  private timerB: TimerHandle | undefined;
  private cancelWanted = false;
  private cancelSent = false;
  private ack: SipRequest | undefined;

  constructor(
    ctx: Context,
    peer: SipPeer,
    onTerminated: () => void,
    readonly request: SipRequest,
    private readonly handlers: ClientTransactionHandlers,
    private readonly sendCancel: (cancel: SipRequest) => void,
  ) {
    super(ctx, peer, onTerminated);
    this.send(request);
    const { t1 } = ctx.values;
    if (!this.reliable) this.retransmitEvery(t1);
    this.timerB = this.after(64 * t1, () => this.timeout());
  }

  private retransmitEvery(interval: number): void {
    this.timerA = this.after(interval, () => {
      this.send(this.request);
      this.retransmitEvery(2 * interval);
    });
  }

  received(response: SipResponse): void {
    const status = response.status;
    if (this.state === 'calling' || this.state === 'proceeding') {
      this.cancelTimer(this.timerA);
      if (status < 200) {
        this.cancelTimer(this.timerB);
        this.state = 'proceeding';
        this.handlers.onResponse(response);
        if (this.cancelWanted) this.cancelNow();
        return;
      }
      this.cancelTimer(this.timerB);
      if (status < 300) {
        this.state = 'accepted';
        this.terminateAfter(64 * this.ctx.values.t1); // Timer M
      } else {
        this.state = 'completed';
        this.ack = this.ackFor(response);
        this.send(this.ack);
        this.terminateAfter(this.reliable ? 0 : TIMER_D_MS);
      }
      this.handlers.onResponse(response);
      return;
    }
    if (this.state === 'accepted' && status >= 200 && status < 300) this.handlers.onResponse(response);
    else if (this.state === 'completed' && status >= 300 && this.ack) this.send(this.ack);
  }

  /**
   * Gives up the call before it is answered: CANCEL now if the far side has answered
   * provisionally, else as soon as it does (§9.1). A final response that crosses it still counts.
   */
  cancel(): void {
    if (this.state === 'calling') this.cancelWanted = true;
    else if (this.state === 'proceeding') this.cancelNow();
  }

  private cancelNow(): void {
    if (this.cancelSent) return;
    this.cancelSent = true;
    const r = this.request;
    const keep = r.headers.filter((h) => ['call-id', 'from', 'to', 'route'].includes(h.name));
    const cseq = cseqOf(r)!;
    this.sendCancel({
      kind: 'request',
      method: 'CANCEL',
      uri: r.uri,
      headers: [
        { name: 'via', value: topVia(r)! },
        ...keep,
        { name: 'cseq', value: `${cseq.number} CANCEL` },
        { name: 'max-forwards', value: '70' },
      ],
      body: '',
    });
    // Without a final response to the INVITE in 64·T1 after the CANCEL, the call is given up.
    this.after(64 * this.ctx.values.t1, () => {
      if (this.state === 'proceeding') this.timeout();
    });
  }

  /** §17.1.1.3: the ACK of a non-2xx final, inside this transaction. */
  private ackFor(response: SipResponse): SipRequest {
    const r = this.request;
    const cseq = cseqOf(r)!;
    return {
      kind: 'request',
      method: 'ACK',
      uri: r.uri,
      headers: [
        { name: 'via', value: topVia(r)! },
        ...r.headers.filter((h) => h.name === 'route'),
        { name: 'max-forwards', value: '70' },
        { name: 'from', value: header(r, 'from')! },
        { name: 'to', value: header(response, 'to') ?? header(r, 'to')! },
        { name: 'call-id', value: header(r, 'call-id')! },
        { name: 'cseq', value: `${cseq.number} ACK` },
      ],
      body: '',
    };
  }

  private timeout(): void {
    this.state = 'terminated';
    this.terminate();
    this.handlers.onTimeout();
  }
}

export class NonInviteClientTransaction extends Transaction {
  state: 'trying' | 'proceeding' | 'completed' | 'terminated' = 'trying';
  private timerE: TimerHandle | undefined;

  constructor(
    ctx: Context,
    peer: SipPeer,
    onTerminated: () => void,
    readonly request: SipRequest,
    private readonly handlers: ClientTransactionHandlers,
  ) {
    super(ctx, peer, onTerminated);
    this.send(request);
    if (!this.reliable) this.retransmitAfter(ctx.values.t1);
    this.after(64 * ctx.values.t1, () => {
      this.state = 'terminated';
      this.terminate();
      this.handlers.onTimeout();
    });
  }

  private retransmitAfter(interval: number): void {
    this.timerE = this.after(interval, () => {
      this.send(this.request);
      const { t2 } = this.ctx.values;
      this.retransmitAfter(this.state === 'proceeding' ? t2 : Math.min(2 * interval, t2));
    });
  }

  received(response: SipResponse): void {
    if (this.state === 'completed' || this.state === 'terminated') return;
    if (response.status < 200) {
      this.state = 'proceeding';
      this.handlers.onResponse(response);
      return;
    }
    this.state = 'completed';
    for (const handle of [...this.handles]) this.cancelTimer(handle);
    this.timerE = undefined;
    this.terminateAfter(this.reliable ? 0 : this.ctx.values.t4); // Timer K
    this.handlers.onResponse(response);
  }
}

export type SipClientTransaction = InviteClientTransaction | NonInviteClientTransaction;

export interface SipTransactionLayerOptions {
  wire: SipWire;
  timers: Timers;
  random: RandomHex;
  /** This side's `host:port` for the Via of requests sent over each transport. */
  sentBy: (transport: SipTransportName) => string;
  /** A new request (never a retransmission, an ACK or a CANCEL): the user agent answers it on `tx`. */
  onRequest: (tx: SipServerTransaction) => void;
  /** An ACK no transaction took (e.g. a late one for a 2xx already given up). */
  onStrayAck?: (ack: SipRequest, from: SipPeer) => void;
  /** A response no transaction took: a 2xx retransmitted after Timer M, or from a second fork. */
  onStrayResponse?: (response: SipResponse, from: SipPeer) => void;
  timerValues?: SipTimerValues;
}

export class SipTransactionLayer {
  private readonly ctx: Context;
  private readonly servers = new Map<string, SipServerTransaction>();
  /** INVITE server transactions that sent a 2xx, by Call-ID and CSeq number, for the end-to-end ACK. */
  private readonly accepted = new Map<string, InviteServerTransaction>();
  private readonly clients = new Map<string, SipClientTransaction>();
  /** Requests answered 400 because no transaction could hold them. */
  unmatchable = 0;

  constructor(private readonly o: SipTransactionLayerOptions) {
    this.ctx = { wire: o.wire, timers: o.timers, values: o.timerValues ?? SIP_TIMERS, random: o.random };
  }

  /** Transactions alive (tests check they all end). */
  get size(): number {
    return this.servers.size + this.clients.size;
  }

  /** Hands in each message the wire reads. */
  receive(message: SipMessage, from: SipPeer): void {
    if (message.kind === 'response') return this.receiveResponse(message, from);
    const via = topVia(message)!;
    const branch = viaBranch(via);
    if (!branch?.startsWith(BRANCH_COOKIE)) {
      this.unmatchable++;
      if (message.method !== 'ACK') this.o.wire.send(responseTo(message, 400, 'Missing Via Branch'), from);
      return;
    }
    const method = message.method === 'ACK' ? 'INVITE' : message.method;
    const key = `${branch}|${viaSentBy(via)}|${method}`;
    const existing = this.servers.get(key);
    if (existing) return existing.retransmitted(message);
    if (message.method === 'ACK') {
      const acked = this.accepted.get(dialogKey(message));
      if (acked) acked.acked(message);
      else this.o.onStrayAck?.(message, from);
      return;
    }
    const done = (): void => {
      this.servers.delete(key);
    };
    if (message.method === 'INVITE') {
      const ackKey = dialogKey(message);
      const tx: InviteServerTransaction = new InviteServerTransaction(
        this.ctx,
        from,
        () => {
          done();
          if (this.accepted.get(ackKey) === tx) this.accepted.delete(ackKey);
        },
        message,
        (accepted) => this.accepted.set(ackKey, accepted),
      );
      this.servers.set(key, tx);
      this.o.onRequest(tx);
      return;
    }
    const tx = new NonInviteServerTransaction(this.ctx, from, done, message);
    this.servers.set(key, tx);
    if (message.method === 'CANCEL') {
      const invite = this.servers.get(`${branch}|${viaSentBy(via)}|INVITE`);
      if (!(invite instanceof InviteServerTransaction)) return tx.respond(481, 'Call/Transaction Does Not Exist');
      tx.respond(200, 'OK');
      invite.cancelled();
      return;
    }
    this.o.onRequest(tx);
  }

  private receiveResponse(response: SipResponse, from: SipPeer): void {
    const via = topVia(response);
    const branch = via === undefined ? undefined : viaBranch(via);
    const cseq = cseqOf(response);
    const tx = branch && cseq ? this.clients.get(`${branch}|${cseq.method}`) : undefined;
    if (tx) tx.received(response);
    else this.o.onStrayResponse?.(response, from);
  }

  /**
   * Sends `request` (without a Via: one with a new branch is put on top) to `to`, in a client
   * transaction of its kind. ACK goes through `sendAck`, CANCEL through the INVITE's `cancel()`.
   */
  sendRequest(request: SipRequest, to: SipPeer, handlers: ClientTransactionHandlers): SipClientTransaction {
    const withVia = this.withVia(request, to.transport);
    const branch = viaBranch(topVia(withVia)!)!;
    const key = `${branch}|${request.method}`;
    const done = (): void => {
      this.clients.delete(key);
    };
    const tx =
      request.method === 'INVITE'
        ? new InviteClientTransaction(this.ctx, to, done, withVia, handlers, (cancel) => {
            const cancelKey = `${branch}|CANCEL`;
            const cancelTx = new NonInviteClientTransaction(
              this.ctx,
              to,
              () => this.clients.delete(cancelKey),
              cancel,
              { onResponse: () => {}, onTimeout: () => {} },
            );
            this.clients.set(cancelKey, cancelTx);
          })
        : new NonInviteClientTransaction(this.ctx, to, done, withVia, handlers);
    if (!tx.terminated) this.clients.set(key, tx);
    return tx;
  }

  /** The ACK of a 2xx: end-to-end, outside any transaction, with a branch of its own (§13.2.2.4). */
  sendAck(ack: SipRequest, to: SipPeer): void {
    this.o.wire.send(this.withVia(ack, to.transport), to);
  }

  private withVia(request: SipRequest, transport: SipTransportName): SipRequest {
    const via = `SIP/2.0/${transport.toUpperCase()} ${this.o.sentBy(transport)};branch=${newBranch(this.o.random)};rport`;
    return {
      ...request,
      headers: [{ name: 'via', value: via }, ...request.headers.filter((h) => h.name !== 'via')],
    };
  }
}

/** An INVITE and the ACK of its 2xx share Call-ID, CSeq number and From tag. */
function dialogKey(message: SipRequest): string {
  return `${header(message, 'call-id')}|${cseqOf(message)?.number}|${tagOf(header(message, 'from'))}`;
}
