import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AgentService } from '../../src/agents/service.ts';
import { OrgLimits } from '../../src/call/limits.ts';
import { recoverOrphanedCalls, type RecoveryDeps } from '../../src/call/recovery.ts';
import { CallEvents } from '../../src/records/events.ts';
import { registeredRecord, type CallRecord } from '../../src/records/record.ts';
import { CallService } from '../../src/records/service.ts';
import { openStore, type Store } from '../../src/store/store.ts';

let dir: string;
let store: Store;
let deps: RecoveryDeps;
let ended: string[];
const NOW = 1_800_000_000_000;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'recovery-'));
  store = openStore(dir, { random: (n) => '0'.repeat(n * 2), now: () => NOW });
  const events = new CallEvents();
  ended = [];
  events.on('ended', ({ record }) => ended.push(record.call_id));
  const clock = { now: () => NOW };
  const log = pino({ level: 'silent' });
  const limits = new OrgLimits(
    { credits: store.credits, calls: store.calls },
    { maxConcurrentCalls: 0, orgLimits: {}, pricePerMinute: 10, now: clock.now },
  );
  const dialer = {
    name: 'none',
    dial: async () => ({ status: 'failed' as const, reason: 'dial_failed' as const, message: 'no carrier' }),
    showsCallerId: () => false,
  };
  const service = new CallService(
    store.calls,
    new AgentService(store.agents, clock),
    dialer,
    clock,
    (n) => '1'.repeat(n * 2),
    log,
    events,
    limits,
  );
  deps = {
    calls: store.calls,
    service,
    events,
    limits,
    clock,
    log,
    recordingsDir: join(dir, 'recordings'),
    recordingUrl: (id) => `http://x/${id}`,
    pricePerMinute: 10,
  };
});
afterEach(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

async function call(
  callId: string,
  status: 'ongoing' | 'registered',
  owner: string | null,
  extra: Partial<CallRecord> = {},
): Promise<void> {
  const record = {
    ...registeredRecord({
      call_id: callId,
      agent_id: 'demo',
      agent_version: 1,
      call_type: 'inbound',
      call_from: null,
      call_to: null,
    }),
    call_status: status,
    ...extra,
  };
  if (status === 'ongoing') record.start_timestamp = NOW - 60_000;
  await store.calls.insert('acme', record, NOW - 60_000, owner ? { ownerNode: owner } : {});
}

describe('node leases', () => {
  it('a node is alive while its lease runs, renewing extends it, and expired leases are taken over', async () => {
    await store.nodes.acquire('a', 'ea', NOW, NOW + 15_000, null);
    await store.nodes.acquire('b', 'eb', NOW - 20_000, NOW - 5_000, null);
    expect(await store.nodes.alive(NOW)).toEqual(['a']);
    expect(await store.nodes.renew('b', 'eb', NOW, NOW + 15_000, null)).toBe(true);
    expect((await store.nodes.alive(NOW)).sort()).toEqual(['a', 'b']);
    expect(await store.nodes.forgetExpired(NOW + 20_000)).toBe(2);
    expect(await store.nodes.renew('a', 'ea', NOW + 20_000, NOW + 35_000, null)).toBe(false);
    await store.nodes.acquire('c', 'ec', NOW, NOW + 1, null);
    // Only the epoch that holds it gives it up.
    await store.nodes.release('c', 'other');
    expect(await store.nodes.alive(NOW)).toEqual(['c']);
    await store.nodes.release('c', 'ec');
    expect(await store.nodes.alive(NOW)).toEqual([]);
  });

  it("a live node's address is known to its peers; a dead node has none", async () => {
    await store.nodes.acquire('a', 'ea', NOW, NOW + 15_000, 'http://127.0.0.1:4001');
    await store.nodes.acquire('b', 'eb', NOW - 20_000, NOW - 5_000, 'http://127.0.0.1:4002');
    expect(await store.nodes.urlOf('a', NOW)).toBe('http://127.0.0.1:4001');
    expect(await store.nodes.urlOf('b', NOW)).toBeNull();
    expect(await store.nodes.urlOf('nobody', NOW)).toBeNull();
    await call('c1', 'ongoing', 'a');
    expect(await store.calls.ownerOf('c1')).toBe('a');
    expect(await store.calls.takeSlot('acme', 'c1', 0, 'b')).toBe(true);
    expect(await store.calls.ownerOf('c1')).toBe('b');
    expect(await store.calls.ownerOf('unknown')).toBeNull();
  });
});

describe('recovering orphaned calls', () => {
  it("finishes the calls of dead nodes and of no node, never a live node's, and a campaign's waiting call is its scheduler's", async () => {
    await call('call_live', 'ongoing', 'a');
    await call('call_dead', 'ongoing', 'b', {
      transcript_with_tool_calls: [{ role: 'agent', content: 'Hello.', start_at: 0.5, end_at: 30 }],
    });
    await call('call_old', 'ongoing', null);
    await call('call_waiting_live', 'registered', 'a');
    await call('call_waiting_dead', 'registered', 'b');
    await call('call_campaign', 'registered', 'b', { campaign_id: 'cmp_1' });
    await recoverOrphanedCalls(deps, ['a'], false);
    const status = async (id: string) => (await store.calls.get('acme', id))!;
    expect(ended.sort()).toEqual(['call_dead', 'call_old', 'call_waiting_dead']);
    expect((await status('call_live')).call_status).toBe('ongoing');
    expect((await status('call_waiting_live')).call_status).toBe('registered');
    expect((await status('call_campaign')).call_status).toBe('registered');
    expect(await status('call_dead')).toMatchObject({
      call_status: 'error',
      disconnection_reason: 'error_service',
      disconnection_message: 'The service stopped during the call.',
      duration_ms: 30_000,
    });
    expect(await status('call_waiting_dead')).toMatchObject({
      call_status: 'not_connected',
      disconnection_reason: 'dial_failed',
      disconnection_message: 'The service process the call was waiting on stopped before it connected.',
    });
    // Once: a second pass finds nothing left to finish.
    await recoverOrphanedCalls(deps, ['a'], false);
    expect(ended).toHaveLength(3);
  });

  it("never finishes a call while a lease of its owner's epoch exists, though the list of live nodes it went by left the owner out (it renewed since)", async () => {
    // The owner's lease ran out and was read as dead, then it renewed before the peer wrote: the call stays its own.
    await store.nodes.acquire('a', 'ea', NOW - 20_000, NOW - 5_000, null);
    await call('call_stalled_owner', 'ongoing', 'a');
    await call('call_stalled_waiting', 'registered', 'a');
    expect(await store.nodes.alive(NOW)).toEqual([]);
    expect(await store.nodes.renew('a', 'ea', NOW, NOW + 15_000, null)).toBe(true);
    await recoverOrphanedCalls(deps, [], false);
    expect(ended).toEqual([]);
    expect((await store.calls.get('acme', 'call_stalled_owner'))!.call_status).toBe('ongoing');
    expect((await store.calls.get('acme', 'call_stalled_waiting'))!.call_status).toBe('registered');
    // Once its lease is taken over, they are finished (and it can no longer renew it).
    expect(await store.nodes.forgetExpired(NOW + 20_000)).toBe(1);
    expect(await store.nodes.renew('a', 'ea', NOW + 20_000, NOW + 35_000, null)).toBe(false);
    await recoverOrphanedCalls(deps, [], false);
    expect(ended.sort()).toEqual(['call_stalled_owner', 'call_stalled_waiting']);
  });

  it('a call whose stream reached another node becomes that node’s', async () => {
    await call('call_moved', 'ongoing', 'b');
    expect(await store.calls.takeSlot('acme', 'call_moved', 0, 'a')).toBe(true);
    await recoverOrphanedCalls(deps, ['a'], false);
    expect((await store.calls.get('acme', 'call_moved'))!.call_status).toBe('ongoing');
  });
});
