// SIP messages (RFC 3261 §7): a start line, header fields, an empty line and a body whose length
// Content-Length gives. Read from whatever a socket received, which anybody on the network may
// have sent: reading never throws, is bounded in size and count, and says why a message is
// refused, so the listener can answer 400 (or drop what cannot be answered). Headers keep their
// order and raw values; the few this side acts on are read by name, compact forms included.

/** A message longer than this is refused; a phone's INVITE with SDP is 1–3 KiB. */
export const MAX_SIP_MESSAGE_BYTES = 16 * 1024;
/** Header fields in one message at most. */
const MAX_HEADERS = 100;

/** Compact header names (RFC 3261 §7.3.3 and the extensions that define them). */
const COMPACT: Record<string, string> = {
  i: 'call-id',
  m: 'contact',
  e: 'content-encoding',
  l: 'content-length',
  c: 'content-type',
  f: 'from',
  s: 'subject',
  k: 'supported',
  t: 'to',
  v: 'via',
  r: 'refer-to',
  o: 'event',
  u: 'allow-events',
  b: 'referred-by',
  x: 'session-expires',
};

/** Header fields every request must carry (§8.1.1), checked on reading. */
const REQUIRED = ['via', 'from', 'to', 'call-id', 'cseq'] as const;

const TOKEN = /^[A-Za-z0-9\-.!%*_+`'~]+$/;

export interface SipHeader {
  /** Lower case, compact forms expanded. */
  name: string;
  value: string;
}

interface SipMessageBase {
  headers: SipHeader[];
  body: string;
}

export interface SipRequest extends SipMessageBase {
  kind: 'request';
  method: string;
  uri: string;
}

export interface SipResponse extends SipMessageBase {
  kind: 'response';
  status: number;
  reason: string;
}

export type SipMessage = SipRequest | SipResponse;

export type SipParseResult = { ok: true; message: SipMessage } | { ok: false; reason: string };

/** The first value of header `name` (any case, compact or long form), or undefined. */
export function header(message: Pick<SipMessage, 'headers'>, name: string): string | undefined {
  const wanted = canonicalName(name);
  return message.headers.find((h) => h.name === wanted)?.value;
}

/**
 * Every value of header `name`, a field listing several (`Via: a, b`) split at its top-level
 * commas (not those inside quotes or angle brackets).
 */
export function headerValues(message: Pick<SipMessage, 'headers'>, name: string): string[] {
  const wanted = canonicalName(name);
  return message.headers.filter((h) => h.name === wanted).flatMap((h) => splitTopLevel(h.value));
}

/**
 * Every field of header `name` as written, not split at commas: for fields whose one value holds
 * commas, such as WWW-Authenticate and Proxy-Authenticate (one challenge per field).
 */
export function headerFields(message: Pick<SipMessage, 'headers'>, name: string): string[] {
  const wanted = canonicalName(name);
  return message.headers.filter((h) => h.name === wanted).map((h) => h.value);
}

function canonicalName(name: string): string {
  const lower = name.toLowerCase();
  return COMPACT[lower] ?? lower;
}

function splitTopLevel(value: string): string[] {
  const parts: string[] = [];
  let quoted = false;
  let angle = 0;
  let start = 0;
  for (let i = 0; i < value.length; i++) {
    const c = value[i];
    if (c === '"' && value[i - 1] !== '\\') quoted = !quoted;
    else if (!quoted && c === '<') angle++;
    else if (!quoted && c === '>') angle = Math.max(0, angle - 1);
    else if (!quoted && angle === 0 && c === ',') {
      parts.push(value.slice(start, i).trim());
      start = i + 1;
    }
  }
  parts.push(value.slice(start).trim());
  return parts.filter((p) => p.length > 0);
}

/** Reads one message from a datagram (or one framed off a stream); never throws. */
export function parseSipMessage(bytes: Uint8Array): SipParseResult {
  if (bytes.length > MAX_SIP_MESSAGE_BYTES) return refuse(`longer than ${MAX_SIP_MESSAGE_BYTES} bytes`);
  const data = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length);
  const end = data.indexOf('\r\n\r\n');
  if (end === -1) return refuse('no empty line after the header fields');
  const head = data.toString('latin1', 0, end);
  const lines = head.split('\r\n');
  const start = lines[0]!;
  const headers: SipHeader[] = [];
  for (const line of lines.slice(1)) {
    if (line.startsWith(' ') || line.startsWith('\t')) {
      // A folded line continues the field before it (§7.3.1).
      const last = headers[headers.length - 1];
      if (!last) return refuse('a continuation line before any header field');
      last.value = `${last.value} ${line.trim()}`;
      continue;
    }
    const colon = line.indexOf(':');
    const name = colon === -1 ? '' : line.slice(0, colon).trim();
    if (!TOKEN.test(name)) return refuse(`a header line that is not name: value`);
    if (headers.length === MAX_HEADERS) return refuse(`more than ${MAX_HEADERS} header fields`);
    headers.push({ name: canonicalName(name), value: line.slice(colon + 1).trim() });
  }
  const bodyBytes = data.subarray(end + 4);
  const lengthText = header({ headers }, 'content-length');
  let bodyLength = bodyBytes.length;
  if (lengthText !== undefined) {
    if (!/^\d{1,5}$/.test(lengthText)) return refuse('Content-Length is not a number');
    bodyLength = Number(lengthText);
    if (bodyLength > bodyBytes.length) return refuse('the body is shorter than Content-Length');
  }
  const body = bodyBytes.toString('utf8', 0, bodyLength);
  const response = /^SIP\/2\.0 ([1-6]\d\d) (.*)$/.exec(start);
  if (response)
    return {
      ok: true,
      message: { kind: 'response', status: Number(response[1]), reason: response[2]!, headers, body },
    };
  const request = /^([A-Za-z0-9\-.!%*_+`'~]+) (\S+) SIP\/2\.0$/.exec(start);
  if (!request) return refuse('the first line is neither a request nor a status line of SIP/2.0');
  const message: SipRequest = { kind: 'request', method: request[1]!, uri: request[2]!, headers, body };
  for (const name of REQUIRED) if (header(message, name) === undefined) return refuse(`no ${name} header field`);
  const cseq = /^(\d{1,10})\s+(\S+)$/.exec(header(message, 'cseq')!);
  if (!cseq || cseq[2] !== message.method) return refuse('CSeq is not a number and the request method');
  return { ok: true, message };
}

function refuse(reason: string): SipParseResult {
  return { ok: false, reason };
}

/** The message as sent: the start line, its header fields, Content-Length of the body, the body. */
export function serializeSipMessage(message: SipMessage): Buffer {
  const start =
    message.kind === 'request'
      ? `${message.method} ${message.uri} SIP/2.0`
      : `SIP/2.0 ${message.status} ${message.reason}`;
  const body = Buffer.from(message.body, 'utf8');
  const lines = [start];
  for (const h of message.headers) if (h.name !== 'content-length') lines.push(`${displayName(h.name)}: ${h.value}`);
  lines.push(`Content-Length: ${body.length}`, '', '');
  return Buffer.concat([Buffer.from(lines.join('\r\n'), 'latin1'), body]);
}

/** Header names as RFC 3261 writes them (Call-ID, CSeq, WWW-Authenticate), others capitalised per word. */
function displayName(name: string): string {
  const special: Record<string, string> = {
    'call-id': 'Call-ID',
    cseq: 'CSeq',
    'www-authenticate': 'WWW-Authenticate',
  };
  return special[name] ?? name.replace(/(^|-)([a-z])/g, (_, dash: string, c: string) => dash + c.toUpperCase());
}

/**
 * A response to `request` (§8.2.6.2): its Via fields, From, Call-ID and CSeq as they came, its To
 * with `toTag` added when the request's To has no tag yet.
 */
export function responseTo(
  request: SipRequest,
  status: number,
  reason: string,
  options: { toTag?: string; headers?: SipHeader[]; body?: string } = {},
): SipResponse {
  const copied = request.headers.filter((h) => ['via', 'from', 'call-id', 'cseq'].includes(h.name));
  let to = header(request, 'to')!;
  if (options.toTag && !/;\s*tag=/i.test(to)) to = `${to};tag=${options.toTag}`;
  return {
    kind: 'response',
    status,
    reason,
    headers: [...copied, { name: 'to', value: to }, ...(options.headers ?? [])],
    body: options.body ?? '',
  };
}

/**
 * Cuts whole messages off a TCP stream (§18.3: each message's end is found by its Content-Length,
 * which a stream message must carry). What is buffered is bounded by one message's size; a stream
 * that breaks the framing is reported, and its connection should be closed, since nothing after
 * the break can be found again. Empty lines between messages are keep-alives (RFC 5626 §4.4.1):
 * a double one is a ping the caller answers with a single CRLF.
 */
export class SipStreamFramer {
  private buffer: Buffer = Buffer.alloc(0);
  /** Empty lines in a row since the last message, across pushes. */
  private blankLines = 0;

  push(chunk: Uint8Array): { messages: Buffer[]; pings: number; error?: string } {
    this.buffer = this.buffer.length === 0 ? Buffer.from(chunk) : Buffer.concat([this.buffer, chunk]);
    const messages: Buffer[] = [];
    let pings = 0;
    for (;;) {
      let skip = 0;
      while (this.buffer[skip] === 0x0d && this.buffer[skip + 1] === 0x0a) {
        skip += 2;
        if (++this.blankLines === 2) pings++;
      }
      if (skip > 0) this.buffer = this.buffer.subarray(skip);
      if (this.buffer.length > 0 && this.buffer[0] !== 0x0d) this.blankLines = 0;
      const end = this.buffer.indexOf('\r\n\r\n');
      if (end === -1) {
        if (this.buffer.length > MAX_SIP_MESSAGE_BYTES) return this.fail(messages, pings, 'header fields too long');
        return { messages, pings };
      }
      const head = this.buffer.toString('latin1', 0, end);
      const length = /\r\n(?:content-length|l)[ \t]*:[ \t]*(\d{1,5})[ \t]*(?:\r\n|$)/i.exec(`\r\n${head}`);
      if (!length) return this.fail(messages, pings, 'a message on a stream without Content-Length');
      const total = end + 4 + Number(length[1]);
      if (total > MAX_SIP_MESSAGE_BYTES)
        return this.fail(messages, pings, `a message longer than ${MAX_SIP_MESSAGE_BYTES} bytes`);
      if (this.buffer.length < total) return { messages, pings };
      messages.push(this.buffer.subarray(0, total));
      this.buffer = this.buffer.subarray(total);
    }
  }

  private fail(messages: Buffer[], pings: number, error: string): { messages: Buffer[]; pings: number; error: string } {
    this.buffer = Buffer.alloc(0);
    return { messages, pings, error };
  }
}
