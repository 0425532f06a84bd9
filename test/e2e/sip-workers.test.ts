// SIP with WORKERS=2, the default on a two-core machine, as a real process called by SIPp. Each service process has
// SIP sockets of its own (worker i on each SIP_LISTEN port + i): sharing one UDP port, the two would each get about
// half of a dialog's requests, and a caller's BYE reaching the other process was answered 481 while the call went on.
// Each also binds its RTP ports alone, so a port one process's call holds is never handed to the other's.
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CallRecordSchema, type CallRecord } from '../../src/records/record.ts';
import { freePort, freeUdpPortPair } from '../helpers/net.ts';
import {
  apiAs,
  callOwners,
  demoAgentsFile,
  freshRequest,
  startServiceProcess,
  type ServiceProcess,
  untilNodesListen,
} from '../helpers/service-process.ts';
import { startSipp } from '../carriers/sip/sipp-run.ts';

const KEY = 'sip-workers-key-0123456789-0123456789-0';
const INBOUND = '+15550800002';
const OUTBOUND = '+15550800003';
const HOST = '127.0.0.1';
const NODE = 'box';
const scenario = (name: string) => join(import.meta.dirname, '..', 'carriers', 'sip', 'sipp', name);

const dir = mkdtempSync(join(tmpdir(), 'sip-workers-'));
const children: ChildProcess[] = [];
const api = apiAs(KEY);
let service: ServiceProcess;
let sipPort: number;
let trunkId: string;

beforeAll(async () => {
  sipPort = await freeUdpPortPair();
  service = await startServiceProcess({
    dataDir: dir,
    port: await freePort(),
    key: KEY,
    started: children,
    env: {
      WORKERS: '2',
      NODE_ID: NODE,
      AGENTS_FILE: demoAgentsFile(dir, INBOUND, 60_000),
      SIP_LISTEN: `udp:${HOST}:${sipPort}`,
      SIP_PUBLIC_HOST: HOST,
      // One even/odd pair: room for one call at a time on the whole machine.
      RTP_PORTS: '48200-48201',
    },
  });
  // The second worker starts once the first is ready: its SIP port is bound once it too holds a lease.
  await untilNodesListen({ dataDir: dir }, 2);
  const trunk = await api(service.url, 'POST', '/v2/sip-trunks', {
    name: 'workers',
    numbers: [INBOUND, OUTBOUND],
    inbound: { allowed_addresses: [`${HOST}/32`] },
  });
  expect(trunk.status).toBe(201);
  trunkId = ((await trunk.json()) as { sip_trunk_id: string }).sip_trunk_id;
}, 90_000);

afterAll(() => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

/** One SIPp call from a caller that hangs up after a second, to `port`: its exit code (0: answered, BYE's 200). */
async function callIn(port: number): Promise<{ code: number | null; output: string }> {
  const run = await startSipp(['-sf', scenario('caller-proxied.xml'), '-s', INBOUND.slice(1), `${HOST}:${port}`], {
    dir,
    timeoutS: 15,
  });
  return run.done();
}

async function records(): Promise<CallRecord[]> {
  const listed = await api(service.url, 'POST', '/v2/calls/list', { limit: 100 });
  return ((await listed.json()) as { calls: unknown[] }).calls.map((r) => CallRecordSchema.parse(r));
}

async function ended(callId: string): Promise<CallRecord> {
  for (let i = 0; i < 150; i++) {
    const record = CallRecordSchema.parse(await (await api(service.url, 'GET', `/v2/calls/${callId}`)).json());
    if (record.end_timestamp !== null) return record;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`call ${callId} never ended`);
}

/** The records again once every one of them has ended. */
async function untilEnded(calls: CallRecord[]): Promise<CallRecord[]> {
  const done: CallRecord[] = [];
  for (const call of calls) done.push(await ended(call.call_id));
  return done;
}

describe('SIP with WORKERS=2', () => {
  it('gives each worker its own SIP port: calls to either are answered and the caller’s BYE ends them user_hangup, on the worker that answered', async () => {
    const ports = [sipPort, sipPort + 1, sipPort, sipPort + 1];
    for (const port of ports) {
      const { code, output } = await callIn(port);
      expect(code, output).toBe(0);
    }
    // SIPp exits on the BYE's 200; the service writes the record's end just after, so the last call may not have
    // ended yet when SIPp has.
    const inbound = await untilEnded((await records()).filter((r) => r.call_type === 'inbound').reverse());
    const owners = await callOwners({ dataDir: dir });
    expect(inbound.map((r) => r.disconnection_reason)).toEqual(ports.map(() => 'user_hangup'));
    expect(inbound.map((r) => owners.get(r.call_id))).toEqual(ports.map((p) => `${NODE}-w${p - sipPort}`));
  }, 90_000);

  it('never gives a port one worker’s call holds to the other worker’s call: with one RTP pair, of two calls at once one is answered and the other refused', async () => {
    const both = await Promise.all([callIn(sipPort), callIn(sipPort + 1)]);
    expect(both.map((r) => r.code).sort()).toEqual([0, 1]);
    expect(both.find((r) => r.code !== 0)!.output).toMatch(/503/);
  }, 60_000);

  it('dials out from whichever worker the request reached, from that worker’s port, and the callee’s BYE ends the call', async () => {
    const dialledBy = new Set<string | undefined>();
    // New connections go to the workers in turn, so two calls are placed by both unless another connection came
    // between; a few more calls at most see to it.
    for (let i = 0; i < 4 && dialledBy.size < 2; i++) {
      const callee = await startSipp(['-sf', scenario('answer-hangup.xml')], { dir, timeoutS: 15 });
      await new Promise((r) => setTimeout(r, 300));
      const patched = await api(service.url, 'PATCH', `/v2/sip-trunks/${trunkId}`, {
        outbound: { address: `${HOST}:${callee.port}`, transport: 'udp' },
      });
      expect(patched.status, await patched.text()).toBe(200);
      const call = await freshRequest(KEY, service.url, 'POST', '/v2/calls', {
        call_from: OUTBOUND,
        call_to: '+15550809999',
        agent_id: 'demo',
      });
      expect(call.status, call.body).toBe(201);
      const callId = (JSON.parse(call.body) as { call_id: string }).call_id;
      const run = await callee.done();
      expect(run.code, run.output).toBe(0);
      expect((await ended(callId)).disconnection_reason).toBe('user_hangup');
      dialledBy.add((await callOwners({ dataDir: dir })).get(callId));
    }
    expect(dialledBy).toEqual(new Set([`${NODE}-w0`, `${NODE}-w1`]));
  }, 90_000);
});
