// A node that stalls past its lease (SIGSTOP: a long GC pause, a starved VM) and comes back
// (SIGCONT), as real processes on one PostgreSQL database (a real Debian server, started here; one
// SQLite file when PostgreSQL is not installed). With no peer to take its lease over it keeps its
// call, which goes on and ends normally. With a live peer, the peer takes the lease over and
// finishes its calls (a campaign's and an inbound call); the stalled node learns it at its next
// beat and closes its callers' lines: each record says error_service and stays as the peer wrote
// it, the campaign counts the call once, and the node goes on serving new calls under a new lease.
import type { ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { CallRecordSchema, type CallRecord } from '../../src/records/record.ts';
import { CampaignResponse } from '../../src/http/campaign-schemas.ts';
import { freePort } from '../helpers/net.ts';
import { placeInboundCall } from '../helpers/phone.ts';
import { postgresBinaries, startPostgres, type PostgresServer } from '../helpers/postgres.ts';
import {
  apiAs,
  callOwners,
  demoAgentsFile,
  startServiceProcess,
  type ServiceProcess,
  type SharedStore,
} from '../helpers/service-process.ts';

const KEY = 'nodes-stall-key-0123456789-0123456789';
const NUMBER = '+15550400001';
/** A simulated phone that answers a campaign's call and holds the line, silent, for two minutes. */
const LISTENER = '+15550400007';
const LEASE_MS = 1_500;
const children: ChildProcess[] = [];
afterEach(() => {
  for (const child of children.splice(0)) child.kill('SIGKILL');
});
let server: PostgresServer | undefined;
afterAll(async () => {
  await server?.stop();
});

const api = apiAs(KEY);
const recordOf = async (url: string, callId: string): Promise<CallRecord> =>
  CallRecordSchema.parse(await (await api(url, 'GET', `/v2/calls/${callId}`)).json());
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** Once the call is under way (its media connected): the agent's greeting need not have played. */
const underWay = (url: string, callId: string) =>
  vi.waitFor(async () => expect((await recordOf(url, callId)).call_status).toBe('ongoing'), {
    timeout: 20_000,
    interval: 100,
  });
const found = postgresBinaries();

describe(`a node stalled past its lease, on ${'missing' in found ? 'one SQLite file' : 'one PostgreSQL database'}`, () => {
  it('keeps its call when no peer took its lease over; when a peer did, its calls end once with error_service, its callers are cut off when it resumes, and it serves new calls', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'voicecall-nodes-stall-'));
    if (!('missing' in found)) server ??= await startPostgres();
    mkdirSync(join(dataDir, 'scripts'));
    writeFileSync(join(dataDir, 'scripts', 'hold.json'), JSON.stringify({ steps: [], max_ms: 120_000 }));
    const shared: SharedStore = server ? { databaseUrl: await server.database() } : { dataDir };
    const env = {
      ...('databaseUrl' in shared ? { DATABASE_URL: shared.databaseUrl } : {}),
      NODE_LEASE_MS: String(LEASE_MS),
      SCHEDULER_LEASE_MS: String(LEASE_MS),
      SCHEDULER_POLL_MS: '100',
      SIM_NUMBERS: `${LISTENER}=answer:hold`,
      SIM_SCRIPTS_DIR: join(dataDir, 'scripts'),
      SIM_ANSWER_DELAY_MS: '100',
      // The demo agent answering NUMBER, silent callers kept for a minute.
      AGENTS_FILE: demoAgentsFile(dataDir, NUMBER, 60_000),
      LOG_LEVEL: 'error',
    };
    const a = await startServiceProcess({
      dataDir,
      port: await freePort(),
      key: KEY,
      env: { ...env, NODE_ID: 'node-a' },
      started: children,
    });
    // Healthy once it listens; its agents are loaded a moment later.
    await vi.waitFor(async () => expect((await api(a.url, 'GET', '/v2/agents/demo')).status).toBe(200), {
      timeout: 20_000,
      interval: 100,
    });
    const stall = async (node: ServiceProcess, until: () => Promise<boolean>) => {
      node.child.kill('SIGSTOP');
      const deadline = Date.now() + 30_000;
      try {
        while (!(await until())) {
          if (Date.now() > deadline) throw new Error('what the stall waited for did not happen within 30 s');
          await pause(100);
        }
      } finally {
        node.child.kill('SIGCONT');
      }
    };

    // Alone, node a stalls for two leases: nobody takes its lease over, so its call is still its own.
    const kept = await placeInboundCall(a.url, NUMBER);
    await underWay(a.url, kept.callId);
    const stalledUntil = Date.now() + 2 * LEASE_MS;
    await stall(a, async () => Date.now() > stalledUntil);
    // Two beats after it resumed, the call still runs and is served: it ends when asked, normally.
    await pause((2 * LEASE_MS) / 3);
    expect(kept.caller.closed).toBe(false);
    expect((await recordOf(a.url, kept.callId)).call_status).toBe('ongoing');
    expect((await api(a.url, 'POST', `/v2/calls/${kept.callId}/end`)).status).toBe(202);
    await kept.caller.waitForClose();
    await vi.waitFor(
      async () =>
        expect(await recordOf(a.url, kept.callId)).toMatchObject({
          call_status: 'ended',
          disconnection_reason: 'agent_hangup',
        }),
      { timeout: 10_000, interval: 100 },
    );

    // With a live peer: a campaign's call, and an inbound call on the node that dialed it.
    const b = await startServiceProcess({
      dataDir,
      port: await freePort(),
      key: KEY,
      env: { ...env, NODE_ID: 'node-b' },
      started: children,
    });
    const campaign = CampaignResponse.parse(
      await (
        await api(a.url, 'POST', '/v2/campaigns', {
          name: 'Stall',
          call_from: '+14155550100',
          agent_id: 'demo',
          tasks: [{ call_to: LISTENER }],
          concurrency: 1,
        })
      ).json(),
    );
    const campaignCallId = await vi.waitFor(
      async () => {
        const page = (await (
          await api(a.url, 'POST', '/v2/calls/list', { filter_criteria: { campaign_id: [campaign.id] } })
        ).json()) as { calls: CallRecord[] };
        expect(page.calls[0]?.call_status).toBe('ongoing');
        return page.calls[0]!.call_id;
      },
      { timeout: 20_000, interval: 100 },
    );
    // Either node's scheduler may have dialed it: that node stalls, the other takes its lease over.
    const [stalled, peer] = (await callOwners(shared)).get(campaignCallId) === 'node-b' ? [b, a] : [a, b];
    const inbound = await placeInboundCall(stalled.url, NUMBER);
    await underWay(stalled.url, inbound.callId);

    // It stalls until its peer has taken its lease over and finished both calls.
    const finals = new Map<string, CallRecord>();
    await stall(stalled, async () => {
      for (const id of [inbound.callId, campaignCallId]) {
        const record = await recordOf(peer.url, id);
        if (record.call_status !== 'ongoing') finals.set(id, record);
      }
      return finals.size === 2;
    });
    const resumedAt = Date.now();
    for (const record of finals.values())
      expect(record).toMatchObject({ call_status: 'error', disconnection_reason: 'error_service' });
    expect(finals.get(inbound.callId)!.disconnection_message).toBe('The service stopped during the call.');

    // Resumed, it finds its lease gone at its next beat and cuts its caller off: no caller is
    // served on a record that says the call ended.
    // (Its overdue beat runs as soon as it resumes; the bound only keeps a failure from hanging.)
    await Promise.race([inbound.caller.waitForClose(), pause(10_000)]);
    expect(inbound.caller.closed).toBe(true);
    console.log(`the stalled node cut its caller off ${Date.now() - resumedAt} ms after it resumed`);
    // The records stay as the peer wrote them, and the campaign counted its call once.
    await pause(LEASE_MS);
    for (const [id, record] of finals) expect(await recordOf(stalled.url, id)).toEqual(record);
    expect(
      CampaignResponse.parse(await (await api(peer.url, 'GET', `/v2/campaigns/${campaign.id}`)).json()),
    ).toMatchObject({
      // It had connected: it counts as completed, however it ended.
      status: 'success',
      completed_calls: 1,
      failed_calls: 0,
      active_concurrency: 0,
    });

    // It holds a new lease: a call it takes now is its own, and its peer leaves it alone.
    const next = await placeInboundCall(stalled.url, NUMBER);
    await underWay(stalled.url, next.callId);
    await pause(LEASE_MS);
    expect(next.caller.closed).toBe(false);
    expect((await recordOf(peer.url, next.callId)).call_status).toBe('ongoing');
  }, 120_000);
});
