// The SIP user agent: what answers and places calls on top of the transaction layer. Inbound, an
// INVITE is first admitted (source address or digest, decided by the caller's `admit`, before
// any RTP port is taken), then rung (180) and answered (200 with the SDP answer); the call's
// media is a SipTransport on the bound port. Inside a call it answers BYE, re-INVITE and UPDATE
// (hold and resume answered from the SDP code, the transport told of the new media), OPTIONS and
// INFO, and sends BYE when the session ends or the media times out. Outbound, it sends an INVITE
// with an SDP offer, answers a digest challenge once, ACKs the 2xx end-to-end and can CANCEL
// while the far side rings. It never relays anything: nothing received makes it send a request
// anywhere but back into a call that exists. A call can be transferred cold with REFER (refer.ts):
// the NOTIFYs that report on it are answered here.
import type { RandomHex } from '../../clock.ts';
import type { Timers } from '../../timers.ts';
import { answerDigestChallenge, type DigestClientCredentials } from './digest.ts';
import { SipDialog } from './dialog.ts';
import { SipError } from './errors.ts';
import type { InviteFloodGuard } from './flood.ts';
import { header, headerFields, type SipHeader, type SipRequest, type SipResponse } from './message.ts';
import type { BoundRtpPort, RtpPortPool } from './rtp-ports.ts';
import { ReferTransfer, type ReferOptions } from './refer.ts';
import { answerOffer, createOffer, readAnswer, type NegotiatedMedia } from './sdp.ts';
import type { RtpCodec } from './rtp-sender.ts';
import {
  cseqOf,
  InviteServerTransaction,
  SipTransactionLayer,
  tagOf,
  type ClientTransactionHandlers,
  type InviteClientTransaction,
  type SipServerTransaction,
  type SipTimerValues,
} from './transactions.ts';
import { SipTransport } from './transport.ts';
import type { SipPeer, SipTransportName, SipWire } from './wire.ts';

const ALLOW = 'INVITE, ACK, CANCEL, BYE, OPTIONS, UPDATE, INFO, NOTIFY';

/** What `admit` decides for an INVITE, before anything is allocated for it. */
export type InviteAdmission<T> =
  | { verdict: 'accept'; value: T }
  /** Ask for credentials: 401 with WWW-Authenticate, or 407 with Proxy-Authenticate. */
  | { verdict: 'challenge'; status: 401 | 407; challenges: string[] }
  /** 403, the same for every reason, so a prober learns nothing. */
  | { verdict: 'refuse' };

export interface SipUserAgentOptions<T> {
  wire: SipWire;
  timers: Timers;
  random: RandomHex;
  /** The host written into Contact and SDP (SIP_PUBLIC_HOST). */
  publicHost: string;
  /** This side's `host:port` for each transport, for Via and Contact. */
  sentBy: (transport: SipTransportName) => string;
  ports: RtpPortPool;
  /** May look trunks up in a store: retransmissions of the INVITE meanwhile are absorbed by its transaction. */
  admit: (invite: SipRequest, from: SipPeer) => InviteAdmission<T> | Promise<InviteAdmission<T>>;
  /** Bounds new INVITEs per source address (503 with Retry-After beyond it); none when absent. */
  floodGuard?: InviteFloodGuard | undefined;
  /** An inbound call was answered (200 sent); its transport is ready for the session. */
  /** The codecs offered and accepted, preferred first; RTP_CODECS (G.722 where built, PCMU, PCMA) when absent. */
  codecs?: readonly RtpCodec[] | undefined;
  onCall: (call: SipCall, admitted: T) => void;
  mediaTimeoutMs?: number;
  timerValues?: SipTimerValues;
  /** Written as User-Agent/Server. */
  product?: string;
}

export type SipCallEnd =
  /** This side sent BYE (the session ended the call). */
  | 'local_bye'
  /** The far side sent BYE. */
  | 'remote_bye'
  /** No RTP for the media timeout: this side sent BYE. */
  | 'media_timeout'
  /** The far side never ACKed this side's 200: this side sent BYE. */
  | 'no_ack';

export class SipCall {
  readonly transport: SipTransport;
  ended: SipCallEnd | undefined;
  /** Told once when the call ends, whichever side ended it. */
  onEnded: ((how: SipCallEnd) => void) | undefined;
  private sessionVersion = 1;
  private localSdp: string;
  /** The REFER under way in this call (a cold transfer), whose NOTIFYs come into the dialog. */
  private referral: ReferTransfer | undefined;

  constructor(
    private readonly ua: SipUserAgent<unknown>,
    readonly direction: 'inbound' | 'outbound',
    readonly dialog: SipDialog,
    private readonly port: BoundRtpPort,
    public media: NegotiatedMedia,
    private readonly sessionId: string,
    localSdp: string,
  ) {
    this.localSdp = localSdp;
    this.transport = ua.newTransport(this, port, media);
  }

  get key(): string {
    const s = this.dialog.state;
    return `${s.callId}|${s.localTag}|${s.remoteTag}`;
  }

  /** Sends BYE (once); the session's close calls this through the transport. */
  hangup(how: SipCallEnd = 'local_bye'): void {
    if (this.ended) return;
    this.end(how);
    const hop = this.dialog.nextHop();
    if (hop) this.ua.sendInDialog(this.dialog.request('BYE'), hop);
  }

  /** The far side hung up (BYE, or CANCEL before the session took the line). */
  remoteHangup(): void {
    if (this.ended) return;
    this.end('remote_bye');
    this.transport.hangup();
  }

  /** Sends REFER in the call's dialog: the far side is asked to call `o.referTo` in this side's place. */
  refer(o: ReferOptions): ReferTransfer {
    const hop = this.dialog.nextHop();
    const referral = new ReferTransfer(
      this.dialog,
      (request, handlers) => {
        if (hop) this.ua.requestInDialog(request, hop, handlers);
        else handlers.onTimeout();
      },
      () => this.ua.cnonce(),
      o,
    );
    this.referral = referral;
    return referral;
  }

  /** @internal a NOTIFY in the dialog: the status to answer it with. */
  notified(request: SipRequest): [number, string] {
    return this.referral?.notified(request) ?? [481, 'Subscription Does Not Exist'];
  }

  /** An offer inside the call (re-INVITE, UPDATE): the answer from the same port, the transport updated. */
  answerReOffer(offer: string): string {
    const { answer, media } = answerOffer(offer, {
      address: this.ua.publicHost,
      port: this.port.port,
      sessionId: this.sessionId,
      sessionVersion: ++this.sessionVersion,
      codecs: [this.media.codec],
    });
    this.localSdp = answer;
    this.media = media;
    this.transport.update(media);
    return answer;
  }

  /** This side's current description (an offer for a re-INVITE that carries none). */
  get currentSdp(): string {
    return this.localSdp;
  }

  /** The answer to the offer this side made in a 200 to an offerless re-INVITE, from its ACK. */
  takeAnswer(answer: string): void {
    const media = readAnswer(answer, { codecs: [this.media.codec] });
    this.media = media;
    this.transport.update(media);
  }

  private end(how: SipCallEnd): void {
    this.ended = how;
    this.ua.forget(this);
    this.referral?.callEnded(how === 'remote_bye' ? 'remote' : 'local');
    this.onEnded?.(how);
  }
}

export type DialResult =
  | { outcome: 'answered'; call: SipCall }
  /** A final response other than 2xx (486/600 busy, 487 after CANCEL, 404, 503…). */
  | { outcome: 'rejected'; status: number; reason: string }
  /** No final response (Timer B), or no answer to a CANCEL. */
  | { outcome: 'timeout' };

export interface DialOptions {
  /** The Request-URI (`sip:+15550001@trunk.example:5060`). */
  uri: string;
  /** The From URI (`sip:+15550002@this-host`). */
  from: string;
  /** Where the INVITE goes (the trunk's outbound address). */
  peer: SipPeer;
  /** Answers a 401/407 once with these. */
  credentials?: DigestClientCredentials | undefined;
  /** Each provisional response (180/183 mark the call ringing). */
  onProgress?: (status: number) => void;
}

export interface OutboundDial {
  /** The call's Call-ID, known as soon as the dial starts (the carrier's id of the call). */
  callId: string;
  result: Promise<DialResult>;
  /** Gives up before the answer: CANCEL as soon as the far side has answered provisionally. */
  cancel(): void;
}

export class SipUserAgent<T> {
  readonly layer: SipTransactionLayer;
  readonly publicHost: string;
  private readonly calls = new Map<string, SipCall>();

  constructor(private readonly o: SipUserAgentOptions<T>) {
    this.publicHost = o.publicHost;
    this.layer = new SipTransactionLayer({
      wire: o.wire,
      timers: o.timers,
      random: o.random,
      sentBy: o.sentBy,
      timerValues: o.timerValues,
      onRequest: (tx) => this.request(tx),
      onStrayResponse: (response, from) => this.strayResponse(response, from),
    });
  }

  /** Calls in progress (answered, not yet ended). */
  get activeCalls(): number {
    return this.calls.size;
  }

  /** Hands in each message the wire reads. */
  receive(...args: Parameters<SipTransactionLayer['receive']>): void {
    this.layer.receive(...args);
  }

  /** @internal the call's transport, wired to send BYE when the session or the media ends. */
  newTransport(call: SipCall, port: BoundRtpPort, media: NegotiatedMedia): SipTransport {
    return new SipTransport({
      port,
      media,
      timers: this.o.timers,
      random: this.o.random,
      carrierCallId: call.dialog.callId,
      mediaTimeoutMs: this.o.mediaTimeoutMs,
      onClose: () => call.hangup('local_bye'),
      onMediaTimeout: () => call.hangup('media_timeout'),
    });
  }

  /** @internal */
  forget(call: SipCall): void {
    this.calls.delete(call.key);
  }

  /** @internal a request inside a call whose answer matters (REFER), in its own client transaction. */
  requestInDialog(request: SipRequest, to: SipPeer, handlers: ClientTransactionHandlers): void {
    this.layer.sendRequest(request, to, handlers);
  }

  /** @internal a client nonce for a digest answer. */
  cnonce(): string {
    return this.o.random(8);
  }

  /** @internal a request inside a call, in its own client transaction. */
  sendInDialog(request: SipRequest, to: SipPeer): void {
    this.layer.sendRequest(request, to, { onResponse: () => {}, onTimeout: () => {} });
  }

  private contact(transport: SipTransportName): string {
    const suffix = transport === 'udp' ? '' : `;transport=${transport}`;
    return `<sip:${this.o.sentBy(transport)}${suffix}>`;
  }

  private productHeaders(name: 'server' | 'user-agent'): SipHeader[] {
    return this.o.product ? [{ name, value: this.o.product }] : [];
  }

  private request(tx: SipServerTransaction): void {
    const request = tx.request;
    if (tagOf(header(request, 'to')) !== undefined) return this.inDialog(tx);
    if (request.method === 'OPTIONS')
      return tx.respond(200, 'OK', {
        headers: [
          { name: 'allow', value: ALLOW },
          { name: 'accept', value: 'application/sdp' },
          ...this.productHeaders('server'),
        ],
      });
    if (tx instanceof InviteServerTransaction) {
      void this.invite(tx).catch(() => tx.respond(500, 'Server Internal Error'));
      return;
    }
    if (request.method === 'BYE' || request.method === 'INFO' || request.method === 'UPDATE')
      return tx.respond(481, 'Call/Transaction Does Not Exist');
    tx.respond(405, 'Method Not Allowed', { headers: [{ name: 'allow', value: ALLOW }] });
  }

  private async invite(tx: InviteServerTransaction): Promise<void> {
    const invite = tx.request;
    const guard = this.o.floodGuard;
    if (guard && !guard.take(tx.peer.address))
      return tx.respond(503, 'Service Unavailable', {
        headers: [{ name: 'retry-after', value: String(guard.retryAfterSeconds(tx.peer.address)) }],
      });
    const admission = await this.o.admit(invite, tx.peer);
    // The caller may have cancelled while admission looked its trunks up.
    if (tx.state !== 'proceeding') return;
    if (admission.verdict === 'refuse') return tx.respond(403, 'Forbidden');
    if (admission.verdict === 'challenge') {
      const name = admission.status === 401 ? 'www-authenticate' : 'proxy-authenticate';
      return tx.respond(admission.status, admission.status === 401 ? 'Unauthorized' : 'Proxy Authentication Required', {
        headers: admission.challenges.map((value) => ({ name, value })),
      });
    }
    const transport = tx.peer.transport;
    const dialog = SipDialog.asServer(invite, {
      localTag: tx.toTag,
      localContact: this.contact(transport),
      localSeq: parseInt(this.o.random(3), 16),
      transport,
    });
    if (!dialog) return tx.respond(400, 'Missing Contact or From tag');
    // A late offer (an INVITE without SDP, answer in the ACK) is not taken yet.
    if (!invite.body || !/^application\/sdp\b/i.test(header(invite, 'content-type') ?? ''))
      return tx.respond(488, 'Not Acceptable Here');
    // A proxy on the path stays on it for the call: its Record-Route goes back in each response
    // that makes the dialog (§12.1.1).
    const recordRoute = invite.headers.filter((h) => h.name === 'record-route');
    tx.respond(180, 'Ringing', { headers: [...recordRoute, { name: 'contact', value: this.contact(transport) }] });
    let port: BoundRtpPort;
    try {
      port = await this.o.ports.bind();
    } catch (error) {
      if (error instanceof SipError)
        return tx.respond(503, 'Service Unavailable', { headers: [{ name: 'retry-after', value: '5' }] });
      throw error;
    }
    // The caller may have cancelled while the port was bound.
    if (tx.state !== 'proceeding') return port.release();
    const sessionId = String(parseInt(this.o.random(4), 16));
    let answered: ReturnType<typeof answerOffer>;
    try {
      answered = answerOffer(invite.body, {
        address: this.publicHost,
        port: port.port,
        sessionId,
        sessionVersion: 1,
        codecs: this.o.codecs,
      });
    } catch (error) {
      port.release();
      if (error instanceof SipError && error.code === 'SIP_NO_COMMON_CODEC')
        return tx.respond(488, 'Not Acceptable Here');
      if (error instanceof SipError) return tx.respond(400, 'Bad SDP');
      throw error;
    }
    const call = new SipCall(
      this as SipUserAgent<unknown>,
      'inbound',
      dialog,
      port,
      answered.media,
      sessionId,
      answered.answer,
    );
    this.calls.set(call.key, call);
    tx.events = {
      onAckTimeout: () => {
        if (call.ended) return;
        call.hangup('no_ack');
        call.transport.hangup();
      },
    };
    tx.respond(200, 'OK', {
      headers: [
        ...recordRoute,
        { name: 'contact', value: this.contact(transport) },
        { name: 'allow', value: ALLOW },
        ...this.productHeaders('server'),
        { name: 'content-type', value: 'application/sdp' },
      ],
      body: answered.answer,
    });
    this.o.onCall(call, admission.value);
  }

  private inDialog(tx: SipServerTransaction): void {
    const request = tx.request;
    const key = `${header(request, 'call-id')}|${tagOf(header(request, 'to'))}|${tagOf(header(request, 'from'))}`;
    const call = this.calls.get(key);
    if (!call) return tx.respond(481, 'Call/Transaction Does Not Exist');
    if (!call.dialog.accept(request)) return tx.respond(500, 'Server Internal Error');
    const sdp: SipHeader[] = [
      { name: 'contact', value: call.dialog.state.localContact },
      { name: 'content-type', value: 'application/sdp' },
    ];
    switch (request.method) {
      case 'BYE':
        tx.respond(200, 'OK');
        call.remoteHangup();
        return;
      case 'INVITE':
      case 'UPDATE': {
        if (!request.body) {
          if (request.method === 'UPDATE') return tx.respond(200, 'OK', { headers: sdp.slice(0, 1) });
          // An offerless re-INVITE: this side offers its current description; the ACK answers.
          if (tx instanceof InviteServerTransaction)
            tx.events = {
              onAck: (ack) => {
                if (ack.body) this.tryAnswer(call, ack.body);
              },
            };
          return tx.respond(200, 'OK', { headers: sdp, body: call.currentSdp });
        }
        let answer: string;
        try {
          answer = call.answerReOffer(request.body);
        } catch (error) {
          if (error instanceof SipError) return tx.respond(488, 'Not Acceptable Here');
          throw error;
        }
        return tx.respond(200, 'OK', { headers: sdp, body: answer });
      }
      case 'OPTIONS':
        return tx.respond(200, 'OK', { headers: [{ name: 'allow', value: ALLOW }] });
      case 'NOTIFY': {
        const [status, reason] = call.notified(request);
        return tx.respond(status, reason);
      }
      case 'INFO': {
        const key = infoKey(header(request, 'content-type'), request.body);
        if (key) call.transport.keyPressed(key);
        return tx.respond(200, 'OK');
      }
      default:
        return tx.respond(405, 'Method Not Allowed', { headers: [{ name: 'allow', value: ALLOW }] });
    }
  }

  private tryAnswer(call: SipCall, answer: string): void {
    try {
      call.takeAnswer(answer);
    } catch (error) {
      if (!(error instanceof SipError)) throw error;
      call.hangup();
      call.transport.hangup();
    }
  }

  /** A 2xx retransmitted after its transaction ended: the ACK is lost, so it is sent again. */
  private strayResponse(response: SipResponse, from: SipPeer): void {
    const cseq = cseqOf(response);
    if (!cseq || cseq.method !== 'INVITE' || response.status < 200 || response.status >= 300) return;
    const key = `${header(response, 'call-id')}|${tagOf(header(response, 'from'))}|${tagOf(header(response, 'to'))}`;
    const call = this.calls.get(key);
    if (!call || call.direction !== 'outbound') return;
    this.layer.sendAck(call.dialog.ack(cseq.number), call.dialog.nextHop() ?? from);
  }

  /** Places a call: INVITE with an offer to `o.peer`, digest answered once, 2xx ACKed. */
  dial(o: DialOptions): OutboundDial {
    let tx: InviteClientTransaction | undefined;
    let cancelled = false;
    const callId = `${this.o.random(16)}@${this.publicHost}`;
    const result = (async (): Promise<DialResult> => {
      const port = await this.o.ports.bind();
      const transport = o.peer.transport;
      const sessionId = String(parseInt(this.o.random(4), 16));
      const offer = createOffer({
        address: this.publicHost,
        port: port.port,
        sessionId,
        sessionVersion: 1,
        codecs: this.o.codecs,
      });
      const base: SipRequest = {
        kind: 'request',
        method: 'INVITE',
        uri: o.uri,
        headers: [
          { name: 'max-forwards', value: '70' },
          { name: 'from', value: `<${o.from}>;tag=${this.o.random(8)}` },
          { name: 'to', value: `<${o.uri}>` },
          { name: 'call-id', value: callId },
          { name: 'cseq', value: '1 INVITE' },
          { name: 'contact', value: this.contact(transport) },
          { name: 'allow', value: ALLOW },
          ...this.productHeaders('user-agent'),
          { name: 'content-type', value: 'application/sdp' },
        ],
        body: offer,
      };
      return new Promise<DialResult>((resolve) => {
        let challenged = false;
        let call: SipCall | undefined;
        const finish = (r: DialResult): void => {
          if (r.outcome !== 'answered') port.release();
          resolve(r);
        };
        const send = (invite: SipRequest): void => {
          tx = this.layer.sendRequest(invite, o.peer, {
            onTimeout: () => finish({ outcome: 'timeout' }),
            onResponse: (response) => {
              const sent = (tx as InviteClientTransaction).request;
              if (response.status < 200) return o.onProgress?.(response.status);
              if (response.status < 300) {
                // Retransmissions of the 2xx get the same ACK again.
                const existing = call;
                if (existing) {
                  this.layer.sendAck(existing.dialog.ack(cseqOf(sent)!.number), existing.dialog.nextHop() ?? o.peer);
                  return;
                }
                const dialog = SipDialog.asClient(sent, response, { transport });
                if (!dialog)
                  return finish({ outcome: 'rejected', status: response.status, reason: 'no Contact or To tag' });
                const hop = dialog.nextHop() ?? o.peer;
                this.layer.sendAck(dialog.ack(cseqOf(sent)!.number), hop);
                let media: NegotiatedMedia;
                try {
                  media = readAnswer(response.body, { codecs: this.o.codecs });
                } catch (error) {
                  if (!(error instanceof SipError)) throw error;
                  this.sendInDialog(dialog.request('BYE'), hop);
                  return finish({ outcome: 'rejected', status: 488, reason: 'the answer shares no codec' });
                }
                call = new SipCall(this as SipUserAgent<unknown>, 'outbound', dialog, port, media, sessionId, offer);
                this.calls.set(call.key, call);
                if (cancelled) {
                  // The answer crossed the CANCEL: the call is ended at once (§9.1).
                  call.hangup();
                  call.transport.close('agent_hangup');
                  return finish({ outcome: 'rejected', status: 487, reason: 'cancelled' });
                }
                return finish({ outcome: 'answered', call });
              }
              const challenge = response.status === 401 || response.status === 407;
              if (challenge && o.credentials && !challenged && !cancelled) {
                const authorization = answerDigestChallenge(
                  headerFields(response, response.status === 401 ? 'www-authenticate' : 'proxy-authenticate'),
                  { method: 'INVITE', uri: o.uri },
                  o.credentials,
                  { cnonce: this.o.random(8) },
                );
                if (authorization) {
                  challenged = true;
                  const seq = cseqOf(sent)!.number + 1;
                  send({
                    ...base,
                    headers: [
                      ...base.headers
                        .map((h) => (h.name === 'cseq' ? { name: 'cseq', value: `${seq} INVITE` } : h))
                        .map((h) => (h.name === 'from' ? { name: 'from', value: header(sent, 'from')! } : h)),
                      {
                        name: response.status === 401 ? 'authorization' : 'proxy-authorization',
                        value: authorization,
                      },
                    ],
                  });
                  return;
                }
              }
              finish({ outcome: 'rejected', status: response.status, reason: response.reason });
            },
          }) as InviteClientTransaction;
        };
        send(base);
        if (cancelled) tx?.cancel();
      });
    })();
    return {
      callId,
      result,
      cancel: () => {
        cancelled = true;
        tx?.cancel();
      },
    };
  }
}

/**
 * The key of a SIP INFO keypad message: `application/dtmf-relay` (`Signal=5` and a Duration
 * line) or `application/dtmf` (the key alone). Some phones send * and # as 10 and 11.
 */
export function infoKey(contentType: string | undefined, body: string): string | undefined {
  const type = contentType?.split(';')[0]?.trim().toLowerCase();
  let signal: string | undefined;
  if (type === 'application/dtmf-relay') signal = /^\s*signal\s*=\s*(\S+)\s*$/im.exec(body)?.[1];
  else if (type === 'application/dtmf') signal = body.trim();
  if (signal === undefined) return undefined;
  const key = signal === '10' ? '*' : signal === '11' ? '#' : signal.toUpperCase();
  return /^[0-9*#A-D]$/.test(key) ? key : undefined;
}
