// SIP call control on the real service, SIPp calling in over loopback (scenarios in test/carriers/sip/sipp/), with a
// short SIP_MEDIA_TIMEOUT_MS so the media timeout shows in seconds: a re-INVITE holds the call past the timeout and
// resumes it at another port, whose audio then reaches the recording; an UPDATE does the same hold; OPTIONS is
// answered in and out of a call; and a caller whose RTP stops is sent BYE and recorded user_hangup with a message
// saying the media stopped. Each SIPp scenario checks the answers it gets (the SDP direction, Allow) and fails
// otherwise.
import { join } from 'node:path';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CallRecordSchema, type CallRecord } from '../../src/records/record.ts';
import { startTestService, type TestService } from '../helpers/service.ts';
import { freeUdpPort } from '../helpers/net.ts';
import { startSipp, writeSippWav } from '../carriers/sip/sipp-run.ts';

const HOST = '127.0.0.1';
const TRUNK_NUMBER = '+15550700011';
const MEDIA_TIMEOUT_MS = 1500;

let t: TestService;
let sipPort: number;
const dir = mkdtempSync(join(tmpdir(), 'sip-media-e2e-'));

beforeAll(async () => {
  sipPort = await freeUdpPort();
  t = await startTestService({
    SIP_LISTEN: `udp:${HOST}:${sipPort}`,
    RTP_PORTS: '47700-47799',
    SIP_MEDIA_TIMEOUT_MS: String(MEDIA_TIMEOUT_MS),
  });
  const demo = (await t.request('GET', '/v2/agents/demo')).body as Record<string, unknown>;
  const { agent_id: _id, version: _v, is_published: _p, last_modified: _m, ...config } = demo;
  const agent = await t.request('POST', '/v2/agents', {
    body: { ...config, agent_id: 'sip-media-desk', begin_message: 'Hello.', inbound_numbers: [TRUNK_NUMBER] },
  });
  expect(agent.status, agent.text).toBe(201);
  const trunk = await t.request('POST', '/v2/sip-trunks', {
    body: { name: 'loopback pbx', numbers: [TRUNK_NUMBER], inbound: { allowed_addresses: [`${HOST}/32`] } },
  });
  expect(trunk.status, trunk.text).toBe(201);
  writeSippWav(join(dir, 'callee.wav'));
}, 30_000);
afterAll(async () => {
  await t?.stop();
  rmSync(dir, { recursive: true, force: true });
});

async function listCalls(): Promise<CallRecord[]> {
  const res = await t.request('POST', '/v2/calls/list', { body: {} });
  return (res.body as { calls: unknown[] }).calls.map((c) => CallRecordSchema.parse(c));
}

/** Runs `scenario` as one call to the trunk number; resolves with SIPp's result and the call's ended record. */
async function callWith(
  scenario: string,
): Promise<{ run: { code: number | null; output: string }; record: CallRecord }> {
  const before = new Set((await listCalls()).map((c) => c.call_id));
  const sipp = await startSipp(
    ['-sf', join(import.meta.dirname, '..', 'carriers', 'sip', 'sipp', scenario), '-s', TRUNK_NUMBER.slice(1)].concat(
      `${HOST}:${sipPort}`,
    ),
    { dir, timeoutS: 15 },
  );
  const run = await sipp.done();
  for (let i = 0; i < 100; i++) {
    const call = (await listCalls()).find((c) => !before.has(c.call_id));
    if (call) {
      const record = CallRecordSchema.parse((await t.request('GET', `/v2/calls/${call.call_id}`)).body);
      if (record.call_status === 'ended') return { run, record };
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`the SIP call never ended: ${run.output}`);
}

function callerPeak(wav: Buffer): number {
  let peak = 0;
  for (let at = 44; at + 4 <= wav.length; at += 4) peak = Math.max(peak, Math.abs(wav.readInt16LE(at)));
  return peak;
}

describe('SIP call control', () => {
  it('answers a re-INVITE hold recvonly and does not time a held call out, and on a resume at another port hears the caller from there', async () => {
    const { run, record } = await callWith('reinvite.xml');
    expect(run.code, run.output).toBe(0);
    expect(record).toMatchObject({ call_type: 'inbound', disconnection_reason: 'user_hangup' });
    expect(record.disconnection_message ?? null).toBeNull();
    // The phrase came only from the port the resume moved the media to.
    const wav = await fetch(`${t.url}/v2/calls/${record.call_id}/recording`, {
      headers: { authorization: `Bearer ${t.keyOf('acme')}` },
    });
    expect(wav.status).toBe(200);
    expect(callerPeak(Buffer.from(await wav.arrayBuffer()))).toBeGreaterThan(5000);
  }, 20_000);

  it('answers an UPDATE hold inactive and its resume sendrecv, and does not time the held call out', async () => {
    const { run, record } = await callWith('update.xml');
    expect(run.code, run.output).toBe(0);
    expect(record).toMatchObject({ disconnection_reason: 'user_hangup' });
    expect(record.disconnection_message ?? null).toBeNull();
  }, 20_000);

  it('answers OPTIONS 200 outside a call (with Allow) and inside one', async () => {
    const { run, record } = await callWith('options.xml');
    expect(run.code, run.output).toBe(0);
    expect(record).toMatchObject({ disconnection_reason: 'user_hangup' });
  }, 20_000);

  it('ends a live call whose RTP stopped with a BYE after SIP_MEDIA_TIMEOUT_MS, user_hangup saying the media stopped', async () => {
    const { run, record } = await callWith('media-stop.xml');
    // SIPp's scenario passes only if the service's BYE came.
    expect(run.code, run.output).toBe(0);
    expect(record).toMatchObject({ disconnection_reason: 'user_hangup' });
    expect(record.disconnection_message).toMatch(/No RTP .* 1\.5 s: the media stopped/);
  }, 20_000);
});
