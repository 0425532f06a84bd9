// A fuzz of a live SIP listener (issue 37: malformed or oversized messages are answered 400 or dropped and never
// crash or stall the process). The parser's own fuzz is in message.test.ts; this one sends generated datagrams and
// TCP streams — mutated real INVITE/OPTIONS/BYE/CANCEL/ACK, oversized, truncated, binary, wrong Content-Length,
// folded header fields, many Via — to startSipService (src/carriers/sip/listen.ts) on 127.0.0.1, whose admission
// is the service's own (InboundAdmission: no trunk allows 127.0.0.1, one takes credentials), and after each batch
// checks that a well-formed OPTIONS is still answered 200 promptly on UDP and on TCP, that no INVITE was accepted
// (the service's record is written only for an accepted call, src/carriers/sip/carrier.ts) and no RTP port bound,
// and that nothing escaped to the process (an exception or rejection the wire did not catch).
import { randomBytes } from 'node:crypto';
import { createSocket, type Socket as UdpSocket } from 'node:dgram';
import { once } from 'node:events';
import { createConnection } from 'node:net';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cryptoRandomHex } from '../../../src/clock.ts';
import { parseSipListen } from '../../../src/config.ts';
import { InboundAdmission } from '../../../src/carriers/sip/admission.ts';
import { DigestServer } from '../../../src/carriers/sip/digest.ts';
import { startSipService, type SipService } from '../../../src/carriers/sip/listen.ts';
import { header, type SipResponse } from '../../../src/carriers/sip/message.ts';
import { RtpPortPool } from '../../../src/carriers/sip/rtp-ports.ts';
import { realTimers } from '../../../src/timers.ts';
import { FUZZ_SEED, runs } from '../../helpers/fuzz.ts';
import { requestText, tcpPeer, udpPeer, type FarPeer } from '../../helpers/sip-peer.ts';

/** How long a well-formed OPTIONS may wait for its 200 after a batch (generous: the machine is shared). */
const PROMPT_MS = 2000;
/** The largest datagram a UDP socket on loopback sends. */
const MAX_DATAGRAM = 65_000;

const sdp = 'v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=-\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\nm=audio 40000 RTP/AVP 0 101\r\n';
const base = (method: string, o: { body?: string; extra?: string[]; uri?: string } = {}) =>
  requestText({
    method,
    branch: `z9hG4bK${method.toLowerCase()}`,
    viaPort: 5060,
    uri: o.uri ?? 'sip:+15550001@127.0.0.1',
    extra: o.extra ?? [],
    ...(o.body === undefined ? {} : { body: o.body }),
  });
/** Real messages a trunk sends: INVITEs to a number held by address and to one held by credentials. */
const REAL = [
  base('INVITE', { body: sdp, extra: ['Contact: <sip:far@127.0.0.1:5060>', 'Content-Type: application/sdp'] }),
  base('INVITE', {
    uri: 'sip:+15550002@127.0.0.1',
    body: sdp,
    extra: [
      'Contact: <sip:far@127.0.0.1:5060>',
      'Content-Type: application/sdp',
      'Authorization: Digest username="trunk", realm="127.0.0.1", nonce="abc", uri="sip:+15550002@127.0.0.1", response="00", algorithm=SHA-256, qop=auth, nc=00000001, cnonce="x"',
    ],
  }),
  base('OPTIONS'),
  base('BYE'),
  base('CANCEL'),
  base('ACK'),
  base('REGISTER'),
  'SIP/2.0 200 OK\r\nVia: SIP/2.0/UDP 127.0.0.1:5060;branch=z9hG4bKresp\r\nFrom: <sip:a@b>;tag=1\r\nTo: <sip:c@d>;tag=2\r\nCall-ID: r@x\r\nCSeq: 1 INVITE\r\nContent-Length: 0\r\n\r\n',
];

const lineOf = (text: string) => text.split('\r\n');
const bytes = (text: string) => Buffer.from(text, 'latin1');

/** One mutation of a real message, as bytes. */
const mutated: fc.Arbitrary<Buffer> = fc
  .tuple(fc.constantFrom(...REAL), fc.nat(), fc.nat(), fc.string({ maxLength: 80 }))
  .chain(([message, i, j, junk]) => {
    const lines = lineOf(message);
    const at = i % lines.length;
    return fc.constantFrom(
      // Truncated anywhere.
      bytes(message.slice(0, i % message.length)),
      // A line dropped, doubled or replaced by junk.
      bytes([...lines.slice(0, at), ...lines.slice(at + 1)].join('\r\n')),
      bytes([...lines.slice(0, at + 1), ...lines.slice(at)].join('\r\n')),
      bytes([...lines.slice(0, at), junk, ...lines.slice(at + 1)].join('\r\n')),
      // A wrong Content-Length: short, long, negative, huge, not a number.
      bytes(message.replace(/Content-Length: \d+/, `Content-Length: ${j % 4000}`)),
      bytes(message.replace(/Content-Length: \d+/, `Content-Length: -${j}`)),
      bytes(message.replace(/Content-Length: \d+/, 'Content-Length: 99999999999999999999')),
      bytes(message.replace(/Content-Length: \d+/, `Content-Length: ${junk}`)),
      // Header fields folded onto continuation lines (RFC 3261 §7.3.1).
      bytes(message.replace(/\r\n(From|To|Via|CSeq|Call-ID): /g, '\r\n$1:\r\n  ')),
      // Many Via: as separate fields and as one comma-separated field.
      bytes(message.replace(/^(Via: [^\r]+\r\n)/m, (via) => via.repeat(1 + (j % 150)))),
      bytes(
        message.replace(
          /^Via: ([^\r]+)/m,
          (_, v: string) => `Via: ${Array.from({ length: 1 + (j % 400) }, () => v).join(', ')}`,
        ),
      ),
      // Binary bytes spliced in.
      Buffer.concat([bytes(message.slice(0, at)), randomBytesOf(j), bytes(message.slice(at))]),
      // A byte flipped.
      (() => {
        const b = bytes(message);
        b[i % b.length] = j % 256;
        return b;
      })(),
      // Oversized: a long body, or a long header field.
      bytes(message.replace(/Content-Length: \d+\r\n\r\n/, `Content-Length: 40000\r\n\r\n${'a'.repeat(40_000)}`)),
      bytes(message.replace(/^(Call-ID: )/m, `$1${'x'.repeat(20_000 + (j % 30_000))}`)),
    );
  });

/** Deterministic "binary" bytes of a length from `seed` (fast-check's own bytes are below, uncorrelated). */
function randomBytesOf(seed: number): Buffer {
  const out = Buffer.alloc(1 + (seed % 64));
  for (let k = 0; k < out.length; k++) out[k] = (seed * 31 + k * 17) & 0xff;
  return out;
}

const message: fc.Arbitrary<Buffer> = fc.oneof(
  { weight: 6, arbitrary: mutated },
  { weight: 1, arbitrary: fc.uint8Array({ maxLength: 2048 }).map((b) => Buffer.from(b)) },
  {
    weight: 1,
    arbitrary: fc
      .array(fc.oneof(fc.constantFrom(...REAL.flatMap(lineOf)), fc.string({ maxLength: 60 })), { maxLength: 30 })
      .map((picked) => bytes(picked.join('\r\n'))),
  },
);

/** What one generated step sends: a datagram, or a TCP stream of messages in chunks (closed at the end, or open). */
type SendStep = { kind: 'udp'; datagram: Buffer } | { kind: 'tcp'; messages: Buffer[]; chunk: number; end: boolean };
const send: fc.Arbitrary<SendStep> = fc.oneof(
  message.map((datagram) => ({ kind: 'udp' as const, datagram })),
  fc
    .record({
      messages: fc.array(message, { minLength: 1, maxLength: 3 }),
      chunk: fc.integer({ min: 1, max: 4096 }),
      end: fc.boolean(),
    })
    .map((o) => ({ kind: 'tcp' as const, ...o })),
);

let service: SipService<string>;
let pool: RtpPortPool;
let portsBound = 0;
const accepted: string[] = [];
const answered: string[] = [];
const handlerErrors: unknown[] = [];
const escaped: unknown[] = [];
const onEscape = (error: unknown) => escaped.push(error);
let fuzzSocket: UdpSocket;
let udpProbe: FarPeer;
let probes = 0;
let batches = 0;
const probeErrors: unknown[] = [];

beforeAll(async () => {
  process.on('uncaughtException', onEscape);
  process.on('unhandledRejection', onEscape);
  pool = new RtpPortPool({ low: 47900, high: 47919 }, '127.0.0.1');
  const bind = pool.bind.bind(pool);
  pool.bind = () => {
    portsBound++;
    return bind();
  };
  const digest = new DigestServer({ key: randomBytes(32), realm: '127.0.0.1', clock: Date, random: cryptoRandomHex });
  const admission = new InboundAdmission<string>(
    () => [
      { numbers: ['+15550001'], allowedAddresses: ['192.0.2.0/24'], value: 'by-address' },
      { numbers: ['+15550002'], allowedAddresses: [], username: 'trunk', password: 'secret', value: 'by-digest' },
    ],
    digest,
  );
  service = await startSipService<string>({
    listen: parseSipListen('udp:127.0.0.1:0,tcp:127.0.0.1:0'),
    publicHost: '127.0.0.1',
    ports: pool,
    timers: realTimers,
    random: cryptoRandomHex,
    admit: (invite, from) => {
      const verdict = admission.admit(invite, from);
      if (verdict.verdict === 'accept') accepted.push(verdict.value.trunk);
      return verdict.verdict === 'accept' ? { verdict: 'accept', value: verdict.value.trunk } : verdict;
    },
    onCall: (call, trunk) => {
      answered.push(trunk);
      call.transport.close('agent_hangup');
    },
    onError: (error) => handlerErrors.push(error),
  });
  fuzzSocket = createSocket('udp4');
  fuzzSocket.on('error', () => {});
  fuzzSocket.bind(0, '127.0.0.1');
  await once(fuzzSocket, 'listening');
  udpProbe = await udpPeer(() => service.ports.udp!);
});

afterAll(async () => {
  fuzzSocket?.close();
  udpProbe?.close();
  await service?.close();
  process.off('uncaughtException', onEscape);
  process.off('unhandledRejection', onEscape);
});

async function sendStep(step: SendStep): Promise<void> {
  if (step.kind === 'udp') {
    const datagram = step.datagram.subarray(0, MAX_DATAGRAM);
    if (datagram.length === 0) return;
    await new Promise<void>((resolve) => fuzzSocket.send(datagram, service.ports.udp!, '127.0.0.1', () => resolve()));
    return;
  }
  const connection = createConnection({ host: '127.0.0.1', port: service.ports.tcp! });
  connection.on('error', () => {});
  connection.on('data', () => {});
  await once(connection, 'connect');
  const stream = Buffer.concat(step.messages);
  for (let at = 0; at < stream.length && !connection.destroyed; at += step.chunk)
    connection.write(stream.subarray(at, at + step.chunk));
  if (step.end) connection.end();
  // Left open or ended, it is gone by the probe: the listener must not wait on it.
  setTimeout(() => connection.destroy(), 50);
}

/** A well-formed OPTIONS on `peer`, answered 200 within PROMPT_MS. */
async function answersOptions(peer: FarPeer, transport: 'UDP' | 'TCP'): Promise<boolean> {
  const branch = `z9hG4bKprobe${++probes}`;
  peer.send(requestText({ method: 'OPTIONS', branch, viaPort: peer.port, transport, callId: `probe-${probes}` }));
  const deadline = Date.now() + PROMPT_MS;
  for (;;) {
    const answer = peer.received.find((m) => header(m, 'via')?.includes(branch));
    if (answer) return (answer as SipResponse).status === 200;
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, 2));
  }
}

describe('a live SIP listener under fuzzed datagrams and TCP streams', () => {
  it('answers a well-formed OPTIONS after every batch, accepts no unauthenticated INVITE, binds no RTP port, and throws nothing', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(send, { minLength: 1, maxLength: 4 }), async (batch) => {
        for (const step of batch) await sendStep(step);
        batches++;
        const tcpProbe = await tcpPeer(service.ports.tcp!);
        tcpProbe.connection.on('error', (error) => probeErrors.push(error));
        try {
          expect(await answersOptions(udpProbe, 'UDP')).toBe(true);
          expect(await answersOptions(tcpProbe, 'TCP')).toBe(true);
        } finally {
          tcpProbe.close();
        }
        expect({ accepted, answered, portsBound, inUse: pool.used, handlerErrors, escaped }).toEqual({
          accepted: [],
          answered: [],
          portsBound: 0,
          inUse: 0,
          handlerErrors: [],
          escaped: [],
        });
      }),
      { seed: FUZZ_SEED, numRuns: runs(300), interruptAfterTimeLimit: 6000, markInterruptAsFailure: false },
    );
    // Whatever the fuzz's last batch set off has had its turn too.
    await new Promise((r) => setTimeout(r, 100));
    expect({ escaped, probeErrors, handlerErrors }).toEqual({ escaped: [], probeErrors: [], handlerErrors: [] });
    // The fuzz reached the parts it aims at: the listener read some of it, refused some, and was answered.
    expect(batches).toBeGreaterThan(0);
    expect(service.wire.stats.received).toBeGreaterThan(probes);
    expect(service.wire.stats.brokenStreams).toBeGreaterThan(0);
    expect(service.wire.stats.malformed).toBeGreaterThan(0);
  }, 20_000);
});
