// A SIP dialog (RFC 3261 §12): the peer-to-peer relation an INVITE's 2xx sets up, identified by
// Call-ID and the two tags, carrying the route set (Record-Route, in the order each side must
// use it), the far side's target (its Contact, refreshed by each re-INVITE) and both CSeq
// counters. It builds the requests this side sends inside the call (BYE, re-INVITE, the ACK of a
// 2xx) and checks the order of those the far side sends. It knows nothing of media or transactions.
import { header, headerValues, type SipHeader, type SipRequest, type SipResponse } from './message.ts';
import { cseqOf, tagOf } from './transactions.ts';
import type { SipPeer, SipTransportName } from './wire.ts';

export interface SipUri {
  user: string | undefined;
  host: string;
  port: number | undefined;
  /** The `transport` parameter, when it names one this side speaks. */
  transport: SipTransportName | undefined;
  /** A loose router (`;lr`), RFC 3261 §16.12 (a strict one puts itself in the Request-URI). */
  lr: boolean;
}

/** `sip:user@host:port;params` (sips: and others are not read); undefined when it is not that. */
export function parseSipUri(text: string): SipUri | undefined {
  const match = /^sip:(?:([^@;]+)@)?(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+)(?::(\d{1,5}))?((?:;[^?]*)?)(?:\?.*)?$/i.exec(
    text.trim(),
  );
  if (!match) return undefined;
  const params = match[4]!.toLowerCase();
  const transport = /;transport=(udp|tcp)\b/.exec(params)?.[1] as SipTransportName | undefined;
  const port = match[3] === undefined ? undefined : Number(match[3]);
  if (port !== undefined && (port < 1 || port > 65535)) return undefined;
  return {
    user: match[1] === undefined ? undefined : decodeURIComponentSafe(match[1]),
    host: match[2]!.replace(/^\[|\]$/g, '').toLowerCase(),
    port,
    transport,
    lr: /;lr(?:[;=]|$)/.test(params),
  };
}

function decodeURIComponentSafe(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

/** The URI of a name-addr (`"Name" <sip:…>;tag=…`) or addr-spec (`sip:…;tag=…`) value. */
export function uriOf(value: string): string {
  const open = value.indexOf('<');
  if (open !== -1) {
    const close = value.indexOf('>', open);
    return value.slice(open + 1, close === -1 ? undefined : close).trim();
  }
  // Without brackets, parameters after the URI belong to the header field (§20).
  return value.trim().split(';')[0]!.trim();
}

/** Where to send a request for `uri` when nothing else says (§19.1.2: port 5060, UDP). */
export function peerOf(uri: SipUri, fallback: SipTransportName = 'udp'): SipPeer {
  return { transport: uri.transport ?? fallback, address: uri.host, port: uri.port ?? 5060 };
}

/** A From/To value with its tag parameter removed (the URI and display name as written). */
function withoutTag(value: string): string {
  return value.replace(/;\s*tag\s*=\s*[^;\s]+/i, '');
}

export interface SipDialogState {
  callId: string;
  localTag: string;
  remoteTag: string;
  /** This side's From (as UAC) or To (as UAS) without its tag. */
  localParty: string;
  remoteParty: string;
  /** The CSeq number of the last request this side sent in the dialog. */
  localSeq: number;
  /** The CSeq number of the last request the far side sent, undefined before its first. */
  remoteSeq: number | undefined;
  /** The far side's Contact URI: where in-dialog requests go. */
  remoteTarget: string;
  /** Route values for this side's requests, in the order to write them. */
  routeSet: string[];
  /** This side's Contact value (`<sip:…>`). */
  localContact: string;
  /** The transport the dialog was set up over, for a target that names none. */
  transport: SipTransportName;
}

export class SipDialog {
  private constructor(readonly state: SipDialogState) {}

  /**
   * The dialog a 2xx (or 1xx with a tag) to `invite` makes at the answering side (§12.1.1): the
   * route set is the INVITE's Record-Route in order, the target its Contact.
   */
  static asServer(
    invite: SipRequest,
    o: { localTag: string; localContact: string; localSeq: number; transport: SipTransportName },
  ): SipDialog | undefined {
    const contact = header(invite, 'contact');
    const remoteTag = tagOf(header(invite, 'from'));
    const cseq = cseqOf(invite);
    if (!contact || remoteTag === undefined || !cseq) return undefined;
    return new SipDialog({
      callId: header(invite, 'call-id')!,
      localTag: o.localTag,
      remoteTag,
      localParty: withoutTag(header(invite, 'to')!),
      remoteParty: withoutTag(header(invite, 'from')!),
      localSeq: o.localSeq,
      remoteSeq: cseq.number,
      remoteTarget: uriOf(contact),
      routeSet: headerValues(invite, 'record-route'),
      localContact: o.localContact,
      transport: o.transport,
    });
  }

  /**
   * The dialog the 2xx to this side's `invite` makes (§12.1.2): the route set is the response's
   * Record-Route reversed, the target its Contact. Undefined for a response without a To tag or
   * Contact, which cannot make a dialog.
   */
  static asClient(
    invite: SipRequest,
    response: SipResponse,
    o: { transport: SipTransportName },
  ): SipDialog | undefined {
    const contact = header(response, 'contact');
    const remoteTag = tagOf(header(response, 'to'));
    const localTag = tagOf(header(invite, 'from'));
    const cseq = cseqOf(invite);
    if (!contact || remoteTag === undefined || localTag === undefined || !cseq) return undefined;
    return new SipDialog({
      callId: header(invite, 'call-id')!,
      localTag,
      remoteTag,
      localParty: withoutTag(header(invite, 'from')!),
      remoteParty: withoutTag(header(invite, 'to')!),
      localSeq: cseq.number,
      remoteSeq: undefined,
      remoteTarget: uriOf(contact),
      routeSet: headerValues(response, 'record-route').reverse(),
      localContact: header(invite, 'contact') ?? '',
      transport: o.transport,
    });
  }

  get callId(): string {
    return this.state.callId;
  }

  /** Whether `request` belongs to this dialog (Call-ID, and the tags seen from this side). */
  owns(request: SipRequest): boolean {
    return (
      header(request, 'call-id') === this.state.callId &&
      tagOf(header(request, 'to')) === this.state.localTag &&
      tagOf(header(request, 'from')) === this.state.remoteTag
    );
  }

  /**
   * Takes the far side's next request (§12.2.2): false when its CSeq is not above the last one
   * (answered 500). A target refresh (re-INVITE, UPDATE) moves the remote target to its Contact.
   */
  accept(request: SipRequest): boolean {
    const cseq = cseqOf(request);
    if (!cseq) return false;
    if (request.method !== 'ACK' && request.method !== 'CANCEL') {
      if (this.state.remoteSeq !== undefined && cseq.number <= this.state.remoteSeq) return false;
      this.state.remoteSeq = cseq.number;
    }
    const contact = header(request, 'contact');
    if (contact && (request.method === 'INVITE' || request.method === 'UPDATE'))
      this.state.remoteTarget = uriOf(contact);
    return true;
  }

  /** Moves the target to a 2xx's Contact (the answer to this side's re-INVITE refreshes it too). */
  refreshFrom(response: SipResponse): void {
    const contact = header(response, 'contact');
    if (contact) this.state.remoteTarget = uriOf(contact);
  }

  /**
   * A request inside the dialog (§12.2.1.1), with the next CSeq number. With a loose first route
   * (or none) the Request-URI is the remote target and the route set goes in Route; with a
   * strict one the first route becomes the Request-URI and the target goes last.
   */
  request(method: string, o: { body?: string; contentType?: string; headers?: SipHeader[] } = {}): SipRequest {
    return this.build(method, ++this.state.localSeq, o);
  }

  /** The ACK of a 2xx to this side's INVITE numbered `inviteSeq` (§13.2.2.4): same CSeq number. */
  ack(inviteSeq: number, o: { body?: string; contentType?: string } = {}): SipRequest {
    return this.build('ACK', inviteSeq, o);
  }

  /** Where this side's in-dialog requests go: the first route, else the remote target. */
  nextHop(): SipPeer | undefined {
    const first = this.state.routeSet[0];
    const uri = parseSipUri(first === undefined ? this.state.remoteTarget : uriOf(first));
    return uri ? peerOf(uri, this.state.transport) : undefined;
  }

  private build(
    method: string,
    seq: number,
    o: { body?: string; contentType?: string; headers?: SipHeader[] },
  ): SipRequest {
    const s = this.state;
    let uri = s.remoteTarget;
    let routes = s.routeSet;
    const first = routes[0];
    if (first !== undefined && !parseSipUri(uriOf(first))?.lr) {
      uri = uriOf(first);
      routes = [...routes.slice(1), `<${s.remoteTarget}>`];
    }
    const headers: SipHeader[] = [
      ...routes.map((value) => ({ name: 'route', value })),
      { name: 'max-forwards', value: '70' },
      { name: 'from', value: `${s.localParty};tag=${s.localTag}` },
      { name: 'to', value: `${s.remoteParty};tag=${s.remoteTag}` },
      { name: 'call-id', value: s.callId },
      { name: 'cseq', value: `${seq} ${method}` },
    ];
    if (method !== 'ACK' && method !== 'BYE' && s.localContact)
      headers.push({ name: 'contact', value: s.localContact });
    headers.push(...(o.headers ?? []));
    if (o.body) headers.push({ name: 'content-type', value: o.contentType ?? 'application/sdp' });
    return { kind: 'request', method, uri, headers, body: o.body ?? '' };
  }
}
