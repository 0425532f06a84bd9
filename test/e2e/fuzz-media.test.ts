// Property-based fuzz of both media protocols against one real service with two organizations
// (the "Safe to expose" issue): Twilio Media Streams on /media/twilio and the browser protocol on
// /media/web get random and mutated frames, before and after `start`. The socket is refused or
// answered within a bound, the process keeps serving with no error logged, and no mutated secret,
// token or other organization's call id ever opens a call's stream.
import { randomBytes } from 'node:crypto';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import WebSocket from 'ws';
import { CallRecordSchema, type CallRecord } from '../../src/records/record.ts';
import { twilioSignature } from '../../src/carriers/twilio/signature.ts';
import { parseTwilioMessage } from '../../src/carriers/twilio/media-protocol.ts';
import { FUZZ_SEED, rawRequest, runs } from '../helpers/fuzz.ts';
import { freePort } from '../helpers/net.ts';
import { queryStore, startServiceProcess, type ServiceProcess } from '../helpers/service-process.ts';
import { startTestService, TEST_TWILIO_TOKEN, type TestService } from '../helpers/service.ts';

let t: TestService;
const A_NUMBER = '+15550190001';
const B_NUMBER = '+15550190002';

/** A socket to a media route that keeps what the server sent and when and how it closed. */
class Probe {
  readonly ws: WebSocket;
  readonly texts: string[] = [];
  binaryFrames = 0;
  closeCode: number | undefined;
  closeReason = '';
  closedAt: number | undefined;
  readonly openedAt = performance.now();
  readonly opened: Promise<void>;
  readonly closed: Promise<number>;

  constructor(url: string) {
    this.ws = new WebSocket(url);
    this.opened = new Promise((resolve, reject) => {
      this.ws.once('open', () => resolve());
      this.ws.once('error', reject);
    });
    // A send racing the server's close may fail on our side; the close code is what counts.
    this.ws.on('error', () => undefined);
    this.closed = new Promise((resolve) =>
      this.ws.on('close', (code, reason) => {
        this.closeCode = code;
        this.closeReason = reason.toString();
        this.closedAt = performance.now();
        resolve(code);
      }),
    );
    this.ws.on('message', (data, isBinary) => {
      if (isBinary) this.binaryFrames++;
      else this.texts.push(data.toString());
    });
  }

  send(frame: Frame): void {
    if (this.ws.readyState !== WebSocket.OPEN) return;
    if (frame.binary) this.ws.send(Buffer.from(frame.data), { binary: true });
    else this.ws.send(typeof frame.data === 'string' ? frame.data : Buffer.from(frame.data), { binary: false });
  }

  /** The close code once the socket closed, or 'open' if it is still open after `ms`. */
  async closedWithin(ms: number): Promise<number | 'open'> {
    let timer: NodeJS.Timeout | undefined;
    const result = await Promise.race([
      this.closed,
      new Promise<'open'>((resolve) => (timer = setTimeout(() => resolve('open'), ms))),
    ]);
    clearTimeout(timer);
    return result;
  }

  terminate(): void {
    this.ws.terminate();
  }
}

/** One WebSocket frame: text (a string, or bytes that may not be UTF-8) or binary. */
interface Frame {
  binary: boolean;
  data: string | Uint8Array;
}

const text = (data: string): Frame => ({ binary: false, data });

/** The media sockets' maxPayload: a bigger frame is refused by the WebSocket layer (1009). */
const MAX_FRAME_BYTES = 256 * 1024;
const bytesOf = (frame: Frame) =>
  typeof frame.data === 'string' ? Buffer.from(frame.data, 'utf8') : Buffer.from(frame.data);
const validUtf8 = (bytes: Buffer) => {
  try {
    new TextDecoder('utf-8', { fatal: true }).decode(bytes);
    return true;
  } catch {
    return false;
  }
};

/**
 * How a socket must end when this frame reaches it, by the WebSocket rules (RFC 6455: 1009 for a
 * frame over the size limit, 1007 for a text frame that is not UTF-8) or, when `parse` refuses the
 * text, the route's rule; null when the frame is taken and the socket stays open.
 */
function refusalOf(frame: Frame, parse: (text: string) => boolean): { code: number; reason?: string } | null {
  const bytes = bytesOf(frame);
  if (bytes.length > MAX_FRAME_BYTES) return { code: 1009 };
  if (!frame.binary && !validUtf8(bytes)) return { code: 1007 };
  return parse(bytes.toString('utf8')) ? null : { code: 1008, reason: 'malformed message' };
}

/** /media/twilio before start: a message Twilio's protocol does not know closes the stream (route.ts). */
const twilioBeforeStart = (frame: Frame) => refusalOf(frame, (t) => parseTwilioMessage(t).ok);

// ---------------------------------------------------------------------------------------------
// The service, its calls and what it logs.

/** Twilio's voice webhook for `to`, signed; the call_id and secret its TwiML hands the stream. */
async function registerPhoneCall(to: string, base = t.url): Promise<{ callId: string; secret: string }> {
  const url = `${base}/telephony/twilio/voice`;
  const params = {
    CallSid: `CA${randomBytes(16).toString('hex')}`,
    From: '+14155550100',
    To: to,
    AccountSid: `AC${'0'.repeat(32)}`,
  };
  const res = await fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      'x-twilio-signature': twilioSignature(TEST_TWILIO_TOKEN, url, params),
    },
    body: new URLSearchParams(params).toString(),
  });
  const twiml = await res.text();
  expect(res.status, twiml).toBe(200);
  const param = (name: string) => new RegExp(`<Parameter name="${name}" value="([^"]+)"/>`).exec(twiml)?.[1];
  const callId = param('call_id');
  const secret = param('secret');
  if (!callId || !secret) throw new Error(`no stream parameters in ${twiml}`);
  return { callId, secret };
}

async function registerWebCall(org: string, agentId: string): Promise<{ callId: string; token: string; url: string }> {
  const res = await t.request('POST', '/v2/web-calls', { key: t.keyOf(org), body: { agent_id: agentId } });
  expect(res.status, res.text).toBe(201);
  const body = res.body as { call_id: string; access_token: string; websocket_url: string };
  return { callId: body.call_id, token: body.access_token, url: body.websocket_url };
}

async function record(org: string, callId: string): Promise<CallRecord> {
  const res = await t.request('GET', `/v2/calls/${callId}`, { key: t.keyOf(org) });
  expect(res.status, res.text).toBe(200);
  return CallRecordSchema.parse(res.body);
}

/** The record once `until` holds, polled; fails after `timeoutMs`. */
async function recordWhen(
  org: string,
  callId: string,
  until: (r: CallRecord) => boolean,
  timeoutMs: number,
): Promise<CallRecord> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const r = await record(org, callId);
    if (until(r)) return r;
    if (performance.now() > deadline) throw new Error(`call ${callId} is still ${r.call_status} after ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

async function expectHealthy(): Promise<void> {
  const health = await rawRequest(t.url, { method: 'GET', path: '/healthz', headers: {} }, 5_000);
  expect(health.status).toBe(200);
}

const errorLevel = (line: string) => /"level":(50|60)/.test(line);
/** @fastify/websocket's default handler logs a frame ws refused (WS_ERR_*) at error level: its own property below. */
const wsFrameError = (line: string) => /"code":"WS_ERR_[A-Z0-9_]+"/.test(line);

/**
 * Error-level lines (a fault in a handler, a call that failed to start) logged since `from`, but for ws frame refusals.
 */
const errorLogs = (from: number) => t.logs.slice(from).filter((line) => errorLevel(line) && !wsFrameError(line));

const twilioUrl = () => `${t.url.replace(/^http/, 'ws')}/media/twilio`;
const webUrl = () => `${t.url.replace(/^http/, 'ws')}/media/web`;

/** The start message Twilio sends, with the given custom parameters . */
function twilioStart(customParameters: Record<string, string> | undefined): string {
  const streamSid = `MZ${randomBytes(16).toString('hex')}`;
  return JSON.stringify({
    event: 'start',
    sequenceNumber: '1',
    start: {
      accountSid: `AC${'0'.repeat(32)}`,
      streamSid,
      callSid: `CA${'1'.repeat(32)}`,
      tracks: ['inbound'],
      mediaFormat: { encoding: 'audio/x-mulaw', sampleRate: 8000, channels: 1 },
      ...(customParameters === undefined ? {} : { customParameters }),
    },
    streamSid,
  });
}

const twilioMedia = (payload: unknown, extra: Record<string, unknown> = {}) =>
  JSON.stringify({
    event: 'media',
    sequenceNumber: '3',
    media: { track: 'inbound', chunk: '1', timestamp: '20', payload },
    streamSid: 'MZ1',
    ...extra,
  });

// ---------------------------------------------------------------------------------------------
// Generators.

/** A string with one change that makes it another string: a character flipped, cut, added, cased, padded. */
const mutatedArb = (original: string): fc.Arbitrary<string> =>
  fc
    .oneof(
      fc.nat().map((i) => {
        const at = i % original.length;
        const c = original.charCodeAt(at);
        return original.slice(0, at) + String.fromCharCode(c === 0x7a ? 0x61 : c + 1) + original.slice(at + 1);
      }),
      fc.integer({ min: 1, max: 8 }).map((n) => original.slice(0, -n)),
      fc.integer({ min: 1, max: 8 }).map((n) => original.slice(n)),
      fc.string({ minLength: 1, maxLength: 8 }).map((s) => original + s),
      fc.constantFrom(
        original.toUpperCase(),
        ` ${original}`,
        `${original} `,
        `${original}\n`,
        `${original}\u0000`,
        original.replace(/[a-f]/, (c) => c.toUpperCase()),
      ),
      fc.constantFrom(
        '',
        ' ',
        '0',
        'null',
        'undefined',
        '*',
        '%',
        'x'.repeat(10_000),
        original.repeat(2),
        [...original].reverse().join(''),
      ),
      fc.string({ unit: 'grapheme', maxLength: 40 }),
    )
    .filter((s) => s !== original);

/** Frames a carrier never sends: broken JSON, other events, wrong types, bytes, sizes at the limit. */
const junkArb: fc.Arbitrary<Frame> = fc.oneof(
  fc.string({ unit: 'grapheme', maxLength: 80 }).map(text),
  fc.jsonValue({ maxDepth: 3 }).map((v) => text(JSON.stringify(v))),
  fc.uint8Array({ maxLength: 400 }).map((data) => ({ binary: true, data })),
  fc.uint8Array({ minLength: 1, maxLength: 64 }).map((data) => ({ binary: false, data })),
  fc.constantFrom(
    text(''),
    text('{'),
    text('null'),
    text('[]'),
    text('"start"'),
    text('{"event":"connected","protocol":"Call","version":"1.0.0"}'),
    text('{"event":"start"}'),
    text('{"event":"start","start":null}'),
    text('{"event":"start","streamSid":"","start":{"streamSid":"","callSid":""}}'),
    text('{"event":"start","streamSid":"MZ1","start":{"streamSid":"MZ1","callSid":"CA1","customParameters":[]}}'),
    text(
      '{"event":"start","streamSid":"MZ1","start":{"streamSid":"MZ1","callSid":"CA1","customParameters":{"call_id":7}}}',
    ),
    text('{"event":"START"}'),
    text('{"event":"stop"}'),
    text('{"event":"mark","mark":{"name":"x"}}'),
    text('{"event":"dtmf","dtmf":{"digit":"1"}}'),
    text('{"event":"clear"}'),
    text('{"__proto__":{"event":"start"}}'),
    text('{"event":"media","media":{"payload":"////"}}'),
    text(twilioMedia('AAAA'.repeat(40))),
    text(twilioMedia('not base64!')),
    text('{"event":"media","media":{"payload":"' + 'A'.repeat(250 * 1024) + '"}}'),
    text('{"type":"start","access_token":"wct_0"}'),
    text('{"type":"hangup"}'),
    text('{"a":'.repeat(5000) + '1' + '}'.repeat(5000)),
    { binary: true, data: new Uint8Array(640) },
    { binary: true, data: new Uint8Array(257 * 1024) },
    { binary: false, data: new Uint8Array([0xff, 0xfe, 0x00, 0xc0, 0xaf]) },
  ),
);

/** Messages Twilio may send before `start` (or could, in another order): taken and ignored until start. */
const twilioBenignArb: fc.Arbitrary<Frame> = fc.oneof(
  fc.constantFrom(
    text('{"event":"connected","protocol":"Call","version":"1.0.0"}'),
    text('{"event":"connected","extra":{"nested":[1,2,3]}}'),
    text('{"event":"stop","sequenceNumber":"5","stop":{"accountSid":"AC1","callSid":"CA1"},"streamSid":"MZ1"}'),
    text('{"event":"mark","sequenceNumber":"4","streamSid":"MZ1","mark":{"name":"x"}}'),
    text('{"event":"dtmf","streamSid":"MZ1","sequenceNumber":"5","dtmf":{"track":"inbound_track","digit":"1"}}'),
  ),
  fc.base64String({ maxLength: 400 }).map((p) => text(twilioMedia(p))),
  fc.string({ maxLength: 50 }).map((name) => text(JSON.stringify({ event: 'mark', mark: { name } }))),
);

/** Frames after `start` on a live stream: media of every wrong shape, marks, DTMF, stop, junk. */
const twilioLiveArb: fc.Arbitrary<Frame> = fc.oneof(
  { weight: 3, arbitrary: junkArb },
  { weight: 2, arbitrary: fc.base64String({ maxLength: 2000 }).map((p) => text(twilioMedia(p))) },
  {
    weight: 1,
    arbitrary: fc.uint8Array({ maxLength: 1000 }).map((b) => text(twilioMedia(Buffer.from(b).toString('base64')))),
  },
  {
    weight: 2,
    arbitrary: fc
      .constantFrom<unknown>(
        '',
        '=',
        '==',
        'A',
        'AA',
        'AAA',
        'A===',
        '====',
        'AA==AA==',
        '-_-_',
        'ÿÿÿÿ',
        7,
        null,
        [],
        {},
        'A'.repeat(200_000),
        Buffer.alloc(160, 0xff).toString('base64'),
      )
      .map((p) => text(twilioMedia(p))),
  },
  {
    weight: 1,
    arbitrary: fc
      .string({ maxLength: 300 })
      .map((name) => text(JSON.stringify({ event: 'mark', streamSid: 'MZ1', mark: { name } }))),
  },
  {
    weight: 1,
    arbitrary: fc
      .string({ maxLength: 5 })
      .map((digit) =>
        text(JSON.stringify({ event: 'dtmf', streamSid: 'MZ1', dtmf: { track: 'inbound_track', digit } })),
      ),
  },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      text('{"event":"stop"}'),
      text(twilioStart({ call_id: 'x', secret: 'y' })),
      text('{"event":"connected"}'),
    ),
  },
);

/** Frames after `start` on a live browser call: audio of every length, control messages of every shape. */
const webLiveArb: fc.Arbitrary<Frame> = fc.oneof(
  { weight: 3, arbitrary: junkArb },
  {
    weight: 2,
    arbitrary: fc.integer({ min: 0, max: 4000 }).map((n) => ({ binary: true, data: new Uint8Array(n).fill(n % 251) })),
  },
  { weight: 1, arbitrary: fc.string({ maxLength: 150 }).map((name) => text(JSON.stringify({ type: 'mark', name }))) },
  { weight: 1, arbitrary: fc.string({ maxLength: 3 }).map((digit) => text(JSON.stringify({ type: 'dtmf', digit }))) },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      text('{"type":"hangup"}'),
      text('{"type":"start","access_token":"wct_again"}'),
      text('{"type":"mark"}'),
      text('{"type":"dtmf","digit":"5","x":1}'),
    ),
  },
);

// ---------------------------------------------------------------------------------------------

/** Registered calls of each organization that the refusal properties try to open. */
let aPhone: { callId: string; secret: string };
let bPhone: { callId: string; secret: string };
let aWeb: { callId: string; token: string; url: string };
let bWeb: { callId: string; token: string; url: string };

beforeAll(async () => {
  t = await startTestService({ STREAM_CONNECT_TIMEOUT_MS: '600000' });
  const demo = (await t.request('GET', '/v2/agents/demo')).body as Record<string, unknown>;
  const { agent_id: _id, version: _v, is_published: _p, last_modified: _m, ...config } = demo;
  // The demo agent with no greeting (the live-stream fuzz runs many short calls) and its default recogniser.
  const agent = { ...config, begin_message: '', inactivity_timeout_ms: 60_000 };
  for (const [org, id, number] of [
    ['acme', 'acme-phone', A_NUMBER],
    ['globex', 'globex-phone', B_NUMBER],
  ] as const) {
    const res = await t.request('POST', '/v2/agents', {
      key: t.keyOf(org),
      body: { ...agent, agent_id: id, inbound_numbers: [number] },
    });
    expect(res.status, res.text).toBe(201);
  }
  aPhone = await registerPhoneCall(A_NUMBER);
  bPhone = await registerPhoneCall(B_NUMBER);
  aWeb = await registerWebCall('acme', 'acme-phone');
  bWeb = await registerWebCall('globex', 'globex-phone');
}, 60_000);

afterAll(async () => t?.stop());

describe('fuzz of the media protocols (one service, two organizations)', () => {
  it('/media/twilio: frames before start, then a start with a mutated secret, a mutated or other organization’s call_id, or none, is closed within 2 s with exactly the code the protocol rules give, and opens no call', async () => {
    const logsFrom = t.logs.length;
    const wrongParams: fc.Arbitrary<Record<string, string>> = fc.oneof(
      mutatedArb(aPhone.secret).map((secret) => ({ call_id: aPhone.callId, secret })),
      mutatedArb(aPhone.callId).map((call_id) => ({ call_id, secret: aPhone.secret })),
      // Each organization's call with the other's secret.
      fc.constant({ call_id: aPhone.callId, secret: bPhone.secret }),
      fc.constant({ call_id: bPhone.callId, secret: aPhone.secret }),
      // A web call's id: it has no stream secret at all.
      fc.constantFrom(
        { call_id: aWeb.callId, secret: aPhone.secret },
        { call_id: aWeb.callId, secret: '' },
        { call_id: aWeb.callId, secret: aWeb.token },
      ),
      fc.constantFrom<Record<string, string>>(
        {},
        { call_id: aPhone.callId },
        { secret: aPhone.secret },
        { call_id: '', secret: '' },
        { CALL_ID: aPhone.callId, SECRET: aPhone.secret },
      ),
      fc.dictionary(
        fc.constantFrom('call_id', 'secret', '__proto__', 'constructor', 'x'),
        fc.string({ maxLength: 40 }),
      ),
    );
    const before = fc.array(fc.oneof({ weight: 4, arbitrary: twilioBenignArb }, { weight: 1, arbitrary: junkArb }), {
      maxLength: 4,
    });
    await fc.assert(
      fc.asyncProperty(before, wrongParams, async (frames, params) => {
        const probe = new Probe(twilioUrl());
        try {
          await probe.opened;
          for (const frame of frames) probe.send(frame);
          probe.send(text(twilioStart(params)));
          // The first frame the rules refuse ends the socket; if none does, the start is refused.
          const expected = frames.map(twilioBeforeStart).find((r) => r !== null) ?? {
            code: 1008,
            reason: 'unknown call or wrong secret',
          };
          const code = await probe.closedWithin(2_000);
          expect(code, `closed with ${code} (${probe.closeReason})`).toBe(expected.code);
          if (expected.reason) expect(probe.closeReason).toBe(expected.reason);
          expect(probe.texts).toEqual([]);
        } finally {
          probe.terminate();
        }
      }),
      { numRuns: runs(60), seed: FUZZ_SEED },
    );
    // Neither organization's call was opened by any of it.
    expect((await record('acme', aPhone.callId)).call_status).toBe('registered');
    expect((await record('globex', bPhone.callId)).call_status).toBe('registered');
    expect((await record('acme', aWeb.callId)).call_status).toBe('registered');
    await expectHealthy();
    expect(errorLogs(logsFrom)).toEqual([]);
    // The refusals were not refusing everything: the exact pair still opens A's call.
    const probe = new Probe(twilioUrl());
    await probe.opened;
    probe.send(text(twilioStart({ call_id: aPhone.callId, secret: aPhone.secret })));
    await recordWhen('acme', aPhone.callId, (r) => r.call_status === 'ongoing', 10_000);
    probe.send(text('{"event":"stop"}'));
    expect(await probe.closedWithin(5_000)).toBe(1000);
  }, 40_000);

  it('/media/web: a first message that is not start with the exact unused token (mutated tokens, the other organization’s call, junk, binary) gets BAD_TOKEN and 1008 within 2 s and opens no call', async () => {
    const logsFrom = t.logs.length;
    const wrongFirst: fc.Arbitrary<Frame> = fc.oneof(
      {
        weight: 3,
        arbitrary: mutatedArb(aWeb.token).map((access_token) => text(JSON.stringify({ type: 'start', access_token }))),
      },
      {
        weight: 1,
        arbitrary: fc
          .constantFrom(aPhone.secret, aPhone.callId, aWeb.callId, t.keyOf('acme'))
          .map((access_token) => text(JSON.stringify({ type: 'start', access_token }))),
      },
      // The right token, but not as the protocol's start message.
      {
        weight: 1,
        arbitrary: fc.constantFrom(
          text(JSON.stringify({ type: 'start', access_token: aWeb.token, extra: 1 })),
          text(JSON.stringify({ type: 'START', access_token: aWeb.token })),
          text(JSON.stringify({ access_token: aWeb.token })),
          text(JSON.stringify([{ type: 'start', access_token: aWeb.token }])),
          text(JSON.stringify({ type: 'start', access_token: [aWeb.token] })),
          { binary: true, data: Buffer.from(JSON.stringify({ type: 'start', access_token: aWeb.token })) },
          text(`{"type":"start","access_token":"${aWeb.token}"`),
        ),
      },
      { weight: 3, arbitrary: junkArb },
    );
    await fc.assert(
      fc.asyncProperty(wrongFirst, fc.array(junkArb, { maxLength: 2 }), async (first, after) => {
        const probe = new Probe(webUrl());
        try {
          await probe.opened;
          probe.send(first);
          for (const frame of after) probe.send(frame);
          // Any first message is final: a refusal by the WebSocket rules, or BAD_TOKEN and 1008. A start's
          // token is looked up in the store, so a later frame the WebSocket rules refuse may close the socket first.
          const firstRefusal = refusalOf(first, () => true)?.code;
          const allowed =
            firstRefusal !== undefined
              ? [firstRefusal]
              : [1008, ...after.flatMap((frame) => refusalOf(frame, () => true)?.code ?? [])];
          const code = await probe.closedWithin(2_000);
          expect(allowed, `closed with ${code} (${probe.closeReason})`).toContain(code);
          if (code === 1008) {
            expect(probe.closeReason).toBe('invalid access token');
            expect(probe.texts.map((m) => JSON.parse(m) as unknown)).toEqual([
              expect.objectContaining({ type: 'error', code: 'BAD_TOKEN' }),
            ]);
          }
          expect(probe.binaryFrames).toBe(0);
        } finally {
          probe.terminate();
        }
      }),
      { numRuns: runs(60), seed: FUZZ_SEED },
    );
    expect((await record('acme', aWeb.callId)).call_status).toBe('registered');
    expect((await record('globex', bWeb.callId)).call_status).toBe('registered');
    await expectHealthy();
    expect(errorLogs(logsFrom)).toEqual([]);
    // The refusals were not refusing everything: the exact token still opens A's call, once.
    const probe = new Probe(aWeb.url);
    await probe.opened;
    probe.send(text(JSON.stringify({ type: 'start', access_token: aWeb.token })));
    await recordWhen('acme', aWeb.callId, (r) => r.call_status === 'ongoing', 10_000);
    probe.send(text('{"type":"hangup"}'));
    expect(await probe.closedWithin(5_000)).toBe(1000);
  }, 40_000);

  it('/media/twilio: a socket that never sends a valid start is closed at its first malformed frame, or else with 1008 by the 10 s start timeout: none hangs on and none opens a call', async () => {
    const logsFrom = t.logs.length;
    const open: { probe: Probe; frames: Frame[] }[] = [];
    const frames = fc.array(fc.oneof(twilioBenignArb, junkArb), { minLength: 1, maxLength: 5 });
    await fc.assert(
      fc.asyncProperty(frames, async (sent) => {
        const probe = new Probe(twilioUrl());
        await probe.opened;
        for (const frame of sent) probe.send(frame);
        const expected = sent.map(twilioBeforeStart).find((r) => r !== null);
        const code = await probe.closedWithin(expected ? 2_000 : 200);
        if (expected) {
          expect(code, probe.closeReason).toBe(expected.code);
          if (expected.reason) expect(probe.closeReason).toBe(expected.reason);
        } else {
          expect(code, 'a stream of well-formed messages waits for its start').toBe('open');
          open.push({ probe, frames: sent });
        }
        expect(probe.texts).toEqual([]);
      }),
      { numRuns: runs(40), seed: FUZZ_SEED },
    );
    expect(open.length, 'some runs sent only well-formed messages').toBeGreaterThan(0);
    // Every one left open is closed by the server's start timeout.
    for (const { probe, frames: sent } of open) {
      const code = await probe.closedWithin(Math.max(0, probe.openedAt + 10_000 + 3_000 - performance.now()));
      expect(code, `after ${JSON.stringify(sent).slice(0, 300)}`).toBe(1008);
      expect(probe.closeReason).toBe('no start message');
    }
    await expectHealthy();
    expect(errorLogs(logsFrom)).toEqual([]);
  }, 40_000);

  it('/media/twilio: any frames after a valid start (garbage base64, odd and huge payloads, binary, marks, DTMF, stop) never crash the call: it ends as user_hangup within 5 s of the hang-up and the service stays healthy', async () => {
    const logsFrom = t.logs.length;
    await fc.assert(
      fc.asyncProperty(fc.array(twilioLiveArb, { minLength: 1, maxLength: 8 }), async (frames) => {
        const call = await registerPhoneCall(A_NUMBER);
        const probe = new Probe(twilioUrl());
        try {
          await probe.opened;
          probe.send(text('{"event":"connected","protocol":"Call","version":"1.0.0"}'));
          probe.send(text(twilioStart({ call_id: call.callId, secret: call.secret })));
          for (const frame of frames) probe.send(frame);
          // A frame may have ended the stream (stop, a frame over the size limit): never with an internal error.
          const code = await probe.closedWithin(100);
          if (code !== 'open') expect([1000, 1005, 1007, 1008, 1009], probe.closeReason).toContain(code);
          probe.send(text('{"event":"stop"}'));
          probe.ws.close(1000);
          const ended = await recordWhen(
            'acme',
            call.callId,
            (r) => !['registered', 'ongoing'].includes(r.call_status),
            5_000,
          );
          expect(ended).toMatchObject({ call_status: 'ended', disconnection_reason: 'user_hangup' });
          await expectHealthy();
        } finally {
          probe.terminate();
        }
      }),
      { numRuns: runs(30), seed: FUZZ_SEED },
    );
    expect(errorLogs(logsFrom)).toEqual([]);
  }, 50_000);

  it('/media/web: any frames after a valid start (odd-length and oversized audio, malformed control messages, a second start) never crash the call: it ends as user_hangup within 5 s of the hang-up and the service stays healthy', async () => {
    const logsFrom = t.logs.length;
    await fc.assert(
      fc.asyncProperty(fc.array(webLiveArb, { minLength: 1, maxLength: 8 }), async (frames) => {
        const call = await registerWebCall('acme', 'acme-phone');
        const probe = new Probe(call.url);
        try {
          await probe.opened;
          probe.send(text(JSON.stringify({ type: 'start', access_token: call.token })));
          for (const frame of frames) probe.send(frame);
          const code = await probe.closedWithin(100);
          if (code !== 'open') expect([1000, 1005, 1007, 1008, 1009], probe.closeReason).toContain(code);
          probe.send(text('{"type":"hangup"}'));
          probe.ws.close(1000);
          const ended = await recordWhen(
            'acme',
            call.callId,
            (r) => !['registered', 'ongoing'].includes(r.call_status),
            5_000,
          );
          expect(ended).toMatchObject({ call_status: 'ended', disconnection_reason: 'user_hangup' });
          for (const message of probe.texts) {
            const event = JSON.parse(message) as { type: string; code?: string };
            if (event.type === 'error') expect(['AUDIO_AHEAD'], message).toContain(event.code);
          }
          await expectHealthy();
        } finally {
          probe.terminate();
        }
      }),
      { numRuns: runs(30), seed: FUZZ_SEED },
    );
    expect(errorLogs(logsFrom)).toEqual([]);
  }, 50_000);

  it('a frame the WebSocket layer refuses (text that is not UTF-8, a frame over 256 KiB), before or after start, closes the socket with 1007 or 1009 and is not logged at error level (any client could flood the error log)', async () => {
    const badFrame: fc.Arbitrary<Frame> = fc.oneof(
      fc
        .uint8Array({ minLength: 1, maxLength: 64 })
        .filter((bytes) => !validUtf8(Buffer.from(bytes)))
        .map((data) => ({ binary: false, data })),
      fc.constantFrom<Frame>(
        { binary: false, data: new Uint8Array([0xc3, 0x28]) },
        { binary: true, data: new Uint8Array(MAX_FRAME_BYTES + 1) },
        { binary: false, data: 'x'.repeat(MAX_FRAME_BYTES + 1) },
      ),
    );
    await fc.assert(
      fc.asyncProperty(fc.constantFrom('twilio', 'web'), fc.boolean(), badFrame, async (route, afterStart, frame) => {
        const logsFrom = t.logs.length;
        let probe: Probe;
        if (route === 'twilio') {
          const call = afterStart ? await registerPhoneCall(A_NUMBER) : undefined;
          probe = new Probe(twilioUrl());
          await probe.opened;
          if (call) probe.send(text(twilioStart({ call_id: call.callId, secret: call.secret })));
        } else {
          const call = afterStart ? await registerWebCall('acme', 'acme-phone') : undefined;
          probe = new Probe(webUrl());
          await probe.opened;
          if (call) probe.send(text(JSON.stringify({ type: 'start', access_token: call.token })));
        }
        try {
          probe.send(frame);
          const code = await probe.closedWithin(2_000);
          expect(code).toBe(refusalOf(frame, () => true)?.code);
          // The server logs what it did with the socket in the moment after.
          await new Promise((resolve) => setTimeout(resolve, 50));
          expect(t.logs.slice(logsFrom).filter(errorLevel)).toEqual([]);
        } finally {
          probe.terminate();
        }
      }),
      { numRuns: runs(20), seed: FUZZ_SEED },
    );
  }, 30_000);
});

// ---------------------------------------------------------------------------------------------
// WORKERS=2: two service processes on one port. A call is registered by the worker its webhook or
// POST reached, and its media socket lands on either: a wrong secret or token is refused alike
// by both, and the right one still opens the call whichever worker its socket reached.

describe('fuzz of the media refusals with WORKERS=2 (a socket lands on either worker)', () => {
  const KEY_A = 'fuzz-media-workers-acme-0123456789-012345';
  const KEY_B = 'fuzz-media-workers-globex-0123456789-0123';
  const started: ChildProcess[] = [];
  let service: ServiceProcess;
  let phone: { a: { callId: string; secret: string }; b: { callId: string; secret: string } };
  let web: { a: { callId: string; token: string }; b: { callId: string; token: string } };

  const as = (key: string, method: string, path: string, body?: unknown) =>
    rawRequest(service.url, {
      method,
      path,
      headers: {
        authorization: `Bearer ${key}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  const statusOf = async (key: string, callId: string) =>
    (JSON.parse((await as(key, 'GET', `/v2/calls/${callId}`)).text) as { call_status: string }).call_status;

  beforeAll(async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'voicecall-fuzz-media-workers-'));
    service = await startServiceProcess({
      dataDir,
      port: await freePort(),
      key: KEY_A,
      env: { WORKERS: '2', API_KEYS: `acme:${KEY_A},globex:${KEY_B}`, STREAM_CONNECT_TIMEOUT_MS: '600000' },
      started,
    });
    await vi.waitFor(
      async () =>
        expect(
          (
            await queryStore<{ n: number }>(
              { dataDir },
              'SELECT count(*) AS n FROM service_nodes WHERE url IS NOT NULL',
            )
          )[0]?.n,
        ).toBe(2),
      { timeout: 30_000, interval: 100 },
    );
    const demo = JSON.parse((await as(KEY_A, 'GET', '/v2/agents/demo')).text) as Record<string, unknown>;
    const { agent_id: _id, version: _v, is_published: _p, last_modified: _m, ...config } = demo;
    for (const [key, id, number] of [
      [KEY_A, 'acme-phone', '+15550191001'],
      [KEY_B, 'globex-phone', '+15550191002'],
    ] as const) {
      const res = await as(key, 'POST', '/v2/agents', {
        ...config,
        begin_message: '',
        agent_id: id,
        inbound_numbers: [number],
      });
      expect(res.status, res.text).toBe(201);
    }
    phone = {
      a: await registerPhoneCall('+15550191001', service.url),
      b: await registerPhoneCall('+15550191002', service.url),
    };
    const webCall = async (key: string, agentId: string) => {
      const res = await as(key, 'POST', '/v2/web-calls', { agent_id: agentId });
      expect(res.status, res.text).toBe(201);
      const body = JSON.parse(res.text) as { call_id: string; access_token: string };
      return { callId: body.call_id, token: body.access_token };
    };
    web = { a: await webCall(KEY_A, 'acme-phone'), b: await webCall(KEY_B, 'globex-phone') };
  }, 120_000);

  afterAll(() => {
    for (const child of started.splice(0)) child.kill('SIGKILL');
  });

  it('a start with a mutated or the other organization’s secret, call id or token is closed with 1008 within 2 s by either worker and opens no call; the exact ones then open theirs', async () => {
    const base = () => service.url.replace(/^http/, 'ws');
    const attempt = fc.oneof(
      mutatedArb(phone.a.secret).map((secret) => ({
        route: 'twilio' as const,
        params: { call_id: phone.a.callId, secret },
      })),
      mutatedArb(phone.a.callId).map((call_id) => ({
        route: 'twilio' as const,
        params: { call_id, secret: phone.a.secret },
      })),
      fc
        .constantFrom(
          { call_id: phone.a.callId, secret: phone.b.secret },
          { call_id: phone.b.callId, secret: phone.a.secret },
        )
        .map((params) => ({ route: 'twilio' as const, params })),
      mutatedArb(web.a.token).map((token) => ({ route: 'web' as const, token })),
      fc.constantFrom(phone.a.secret, web.a.callId, KEY_A).map((token) => ({ route: 'web' as const, token })),
    );
    await fc.assert(
      fc.asyncProperty(attempt, async (a) => {
        const probe = new Probe(`${base()}/media/${a.route}`);
        try {
          await probe.opened;
          probe.send(
            text(
              a.route === 'twilio' ? twilioStart(a.params) : JSON.stringify({ type: 'start', access_token: a.token }),
            ),
          );
          const code = await probe.closedWithin(2_000);
          expect(code, `closed with ${code} (${probe.closeReason})`).toBe(1008);
          expect(probe.closeReason).toBe(
            a.route === 'twilio' ? 'unknown call or wrong secret' : 'invalid access token',
          );
          expect(probe.binaryFrames).toBe(0);
        } finally {
          probe.terminate();
        }
      }),
      { numRuns: runs(30), seed: FUZZ_SEED },
    );
    for (const [key, callId] of [
      [KEY_A, phone.a.callId],
      [KEY_B, phone.b.callId],
      [KEY_A, web.a.callId],
      [KEY_B, web.b.callId],
    ] as const)
      expect(await statusOf(key, callId)).toBe('registered');
    // The exact pair and token open their calls.
    const twilio = new Probe(`${base()}/media/twilio`);
    const browser = new Probe(`${base()}/media/web`);
    await Promise.all([twilio.opened, browser.opened]);
    twilio.send(text(twilioStart({ call_id: phone.a.callId, secret: phone.a.secret })));
    browser.send(text(JSON.stringify({ type: 'start', access_token: web.b.token })));
    await vi.waitFor(
      async () =>
        expect([await statusOf(KEY_A, phone.a.callId), await statusOf(KEY_B, web.b.callId)]).toEqual([
          'ongoing',
          'ongoing',
        ]),
      { timeout: 10_000, interval: 100 },
    );
    twilio.send(text('{"event":"stop"}'));
    browser.send(text('{"type":"hangup"}'));
    expect(await Promise.all([twilio.closedWithin(5_000), browser.closedWithin(5_000)])).toEqual([1000, 1000]);
  }, 40_000);
});
