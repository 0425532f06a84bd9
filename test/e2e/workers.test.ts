// WORKERS=2 as a real process: two service processes on one port. Calls spread over both; a
// request about a call (live control, a listener's socket) is served whichever worker it reaches;
// a browser's token is redeemed whichever worker its socket reaches; a metrics scrape counts both;
// and a worker killed with SIGKILL ends only its own calls (error_service), while the other
// worker's calls go on and the killed one is started again.
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import WebSocket from 'ws';
import { CallRecordSchema } from '../../src/records/record.ts';
import { freePort } from '../helpers/net.ts';
import { agentFinished, placeInboundCall, type PlacedCall } from '../helpers/phone.ts';
import {
  apiAs,
  callOwners,
  childProcessesOf,
  demoAgentsFile,
  freshRequest,
  startServiceProcess,
  untilNodesListen,
} from '../helpers/service-process.ts';
import { WebCallClient } from '../helpers/web-client.ts';

const KEY = 'workers-key-0123456789-0123456789-01';
const NUMBER = '+15550300003';
const children: ChildProcess[] = [];
afterEach(() => {
  for (const child of children.splice(0)) child.kill('SIGKILL');
});

const api = apiAs(KEY);
const recordOf = async (url: string, callId: string) =>
  CallRecordSchema.parse(await (await api(url, 'GET', `/v2/calls/${callId}`)).json());

/** Opens the call's listener socket and resolves with how many audio frames it got in its first 1.5 s. */
function listenBriefly(url: string, callId: string): Promise<{ audioFrames: number; closeCode: number | null }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`${url.replace(/^http/, 'ws')}/v2/calls/${callId}/listen`, {
      headers: { authorization: `Bearer ${KEY}` },
    });
    let audioFrames = 0;
    let closeCode: number | null = null;
    ws.on('message', (_data, binary) => {
      if (binary) audioFrames++;
    });
    ws.on('close', (code) => (closeCode = code));
    ws.on('error', reject);
    setTimeout(() => {
      ws.close();
      resolve({ audioFrames, closeCode });
    }, 1_500);
  });
}

/** The worker processes of a primary, by the NODE_ID each was given. */
function workersOf(primary: ChildProcess): Map<string, number> {
  const found = new Map<string, number>();
  for (const child of childProcessesOf(primary.pid!)) {
    const nodeId = child.env.find((e) => e.startsWith('NODE_ID='))?.slice('NODE_ID='.length);
    if (nodeId) found.set(nodeId, child.pid);
  }
  return found;
}

describe('WORKERS=2', () => {
  it('spreads calls over both workers, serves control, listeners and web calls from either, and a killed worker ends only its own calls and comes back', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'voicecall-workers-'));
    const agentsFile = demoAgentsFile(dataDir, NUMBER, 120_000);
    const service = await startServiceProcess({
      dataDir,
      port: await freePort(),
      key: KEY,
      env: { WORKERS: '2', NODE_ID: 'box', NODE_LEASE_MS: '3000', AGENTS_FILE: agentsFile, METRICS: 'public' },
      started: children,
    });
    // Both workers hold a lease once both listen.
    await vi.waitFor(() => expect(workersOf(service.child).size).toBe(2), { timeout: 30_000, interval: 200 });
    await untilNodesListen({ dataDir }, 2);

    const calls: PlacedCall[] = [];
    for (let i = 0; i < 4; i++) calls.push(await placeInboundCall(service.url, NUMBER));
    await Promise.all(calls.map((c) => agentFinished(c.caller, { after: 0, timeoutMs: 30_000, quietMs: 200 })));
    const owned = await callOwners({ dataDir });
    expect(new Set(calls.map((c) => owned.get(c.callId)))).toEqual(new Set(['box-w0', 'box-w1']));
    // A scrape reaching either worker counts the calls of both.
    for (let i = 0; i < 2; i++) {
      const metrics = await freshRequest(KEY, service.url, 'GET', '/metrics');
      expect(metrics.body).toMatch(/^voicecall_active_calls\{call_type="inbound"\} 4$/m);
    }

    // Each request on a new connection: half of them reach the worker that does not run the call.
    // All at once, call by call: each call's requests land on both workers by turns.
    await Promise.all(
      calls.map(async ({ callId }) => {
        for (let i = 0; i < 2; i++) {
          const context = await freshRequest(KEY, service.url, 'POST', `/v2/calls/${callId}/context`, {
            content: `note ${i}`,
          });
          expect(context.status, context.body).toBe(202);
        }
        // Two listeners (one on each worker, by turns) hear the line a third request has the agent say.
        const listening = Promise.all([listenBriefly(service.url, callId), listenBriefly(service.url, callId)]);
        await new Promise((r) => setTimeout(r, 200));
        const say = await freshRequest(KEY, service.url, 'POST', `/v2/calls/${callId}/say`, {
          text: 'One moment please.',
        });
        expect(say.status, say.body).toBe(202);
        for (const heard of await listening) expect(heard.audioFrames).toBeGreaterThan(0);
      }),
    );
    // An unknown call is 404 from either worker: there is no owner to pass the request to.
    const unknown = await freshRequest(KEY, service.url, 'POST', `/v2/calls/call_nope/end`);
    expect(unknown.status).toBe(404);

    // Browser calls: the token is issued by one worker, the socket lands on either.
    const web: WebCallClient[] = [];
    for (let i = 0; i < 2; i++) {
      const created = await freshRequest(KEY, service.url, 'POST', '/v2/web-calls', { agent_id: 'demo' });
      expect(created.status, created.body).toBe(201);
      const { websocket_url, access_token } = JSON.parse(created.body) as {
        websocket_url: string;
        access_token: string;
      };
      const client = new WebCallClient(websocket_url);
      await client.opened;
      client.send({ type: 'start', access_token });
      await client.waitFor((e) => e.type === 'call_started', 20_000);
      web.push(client);
    }

    // One worker dies: only its calls end, once, with error_service; the other's go on.
    const victim = 'box-w1';
    const pid = workersOf(service.child).get(victim)!;
    const killedAt = Date.now();
    process.kill(pid, 'SIGKILL');
    const afterKill = await callOwners({ dataDir });
    const theirs = calls.filter((c) => afterKill.get(c.callId) === victim);
    const ours = calls.filter((c) => afterKill.get(c.callId) !== victim);
    expect(theirs.length).toBeGreaterThan(0);
    expect(ours.length).toBeGreaterThan(0);
    for (const { callId } of theirs) {
      const ended = await vi.waitFor(
        async () => {
          const record = await recordOf(service.url, callId);
          expect(record.call_status).toBe('error');
          return record;
        },
        { timeout: 30_000, interval: 200 },
      );
      expect(ended).toMatchObject({ disconnection_reason: 'error_service' });
    }
    for (const { callId, caller } of ours) {
      expect((await recordOf(service.url, callId)).call_status).toBe('ongoing');
      expect(caller.closed).toBe(false);
    }
    // It comes back under the same node id, and takes calls again.
    await vi.waitFor(
      () => {
        const again = workersOf(service.child).get(victim);
        expect(again).toBeDefined();
        expect(again).not.toBe(pid);
      },
      { timeout: 30_000, interval: 200 },
    );
    const placed: PlacedCall[] = [];
    await vi.waitFor(
      async () => {
        const next = await placeInboundCall(service.url, NUMBER);
        placed.push(next);
        // Owned by the worker its stream reached as soon as that worker runs it.
        await next.caller.waitFor((m) => m.event === 'media', 20_000);
        expect((await callOwners({ dataDir })).get(next.callId)).toBe(victim);
      },
      { timeout: 40_000, interval: 100 },
    );
    expect(Date.now() - killedAt).toBeLessThan(40_000);
    await Promise.all([...calls, ...placed].map((c) => c.caller.hangUp()));
    for (const client of web) client.send({ type: 'hangup' });
  }, 150_000);
});
