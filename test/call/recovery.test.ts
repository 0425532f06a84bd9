import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AgentService } from '../../src/agents/service.ts';
import { OrgLimits } from '../../src/call/limits.ts';
import { recoverOrphanedCalls, type RecoveryDeps } from '../../src/call/recovery.ts';
import { CallEvents } from '../../src/calls/events.ts';
import { registeredRecord, type CallRecord } from '../../src/calls/record.ts';
import { CallService } from '../../src/calls/service.ts';
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
  const limits = new OrgLimits({ credits: store.credits, calls: store.calls, liveNodes: () => ['a'] }, { maxConcurrentCalls: 0, orgLimits: {}, pricePerMinute: 10, now: clock.now });
  const dialer = { name: 'none', dial: async () => ({ status: 'failed' as const, reason: 'dial_failed' as const, message: 'no carrier' }), showsCallerId: () => false };
  const service = new CallService(store.calls, new AgentService(store.agents, clock), dialer, clock, (n) => '1'.repeat(n * 2), log, events, limits);
  deps = { calls: store.calls, service, events, limits, clock, log, recordingsDir: join(dir, 'recordings'), recordingUrl: (id) => `http://x/${id}`, pricePerMinute: 10 };
});
afterEach(() => {
  store.close();
  rmSync(dir, { recursive: true, force: true });
});

function call(callId: string, status: 'ongoing' | 'registered', owner: string | null, extra: Partial<CallRecord> = {}): void {
  const record = { ...registeredRecord({ call_id: callId, agent_id: 'demo', agent_version: 1, call_type: 'inbound', call_from: null, call_to: null }), call_status: status, ...extra };
  if (status === 'ongoing') record.start_timestamp = NOW - 60_000;
  store.calls.insert('acme', record, NOW - 60_000, owner ? { ownerNode: owner } : {});
}

describe('node leases', () => {
  it('a node is alive while its lease runs, renewing extends it, and expired nodes are forgotten', () => {
    store.nodes.renew('a', NOW, NOW + 15_000, null);
    store.nodes.renew('b', NOW - 20_000, NOW - 5_000, null);
    expect(store.nodes.alive(NOW)).toEqual(['a']);
    store.nodes.renew('b', NOW, NOW + 15_000, null);
    expect(store.nodes.alive(NOW).sort()).toEqual(['a', 'b']);
    expect(store.nodes.forgetExpired(NOW + 20_000)).toBe(2);
    store.nodes.renew('c', NOW, NOW + 1, null);
    store.nodes.release('c');
    expect(store.nodes.alive(NOW)).toEqual([]);
  });

  it("a live node's address is known to its peers; a dead node has none", () => {
    store.nodes.renew('a', NOW, NOW + 15_000, 'http://127.0.0.1:4001');
    store.nodes.renew('b', NOW - 20_000, NOW - 5_000, 'http://127.0.0.1:4002');
    expect(store.nodes.urlOf('a', NOW)).toBe('http://127.0.0.1:4001');
    expect(store.nodes.urlOf('b', NOW)).toBeNull();
    expect(store.nodes.urlOf('nobody', NOW)).toBeNull();
    call('c1', 'ongoing', 'a');
    expect(store.calls.ownerOf('c1')).toBe('a');
    store.calls.setOwner('c1', 'b');
    expect(store.calls.ownerOf('c1')).toBe('b');
    expect(store.calls.ownerOf('unknown')).toBeNull();
  });
});

describe('recovering orphaned calls', () => {
  it("finishes the calls of dead nodes and of no node, never a live node's, and a campaign's waiting call is its scheduler's", () => {
    call('call_live', 'ongoing', 'a');
    call('call_dead', 'ongoing', 'b', { transcript_with_tool_calls: [{ role: 'agent', content: 'Hello.', start_at: 0.5, end_at: 30 }] });
    call('call_old', 'ongoing', null);
    call('call_waiting_live', 'registered', 'a');
    call('call_waiting_dead', 'registered', 'b');
    call('call_campaign', 'registered', 'b', { campaign_id: 'cmp_1' });
    recoverOrphanedCalls(deps, ['a'], false);
    const status = (id: string) => store.calls.get('acme', id)!;
    expect(ended.sort()).toEqual(['call_dead', 'call_old', 'call_waiting_dead']);
    expect(status('call_live').call_status).toBe('ongoing');
    expect(status('call_waiting_live').call_status).toBe('registered');
    expect(status('call_campaign').call_status).toBe('registered');
    expect(status('call_dead')).toMatchObject({ call_status: 'error', disconnection_reason: 'error_service', disconnection_message: 'The service stopped during the call.', duration_ms: 30_000 });
    expect(status('call_waiting_dead')).toMatchObject({
      call_status: 'not_connected',
      disconnection_reason: 'dial_failed',
      disconnection_message: 'The service process the call was waiting on stopped before it connected.',
    });
    // Once: a second pass finds nothing left to finish.
    recoverOrphanedCalls(deps, ['a'], false);
    expect(ended).toHaveLength(3);
  });

  it('a call whose stream reached another node becomes that node’s', () => {
    call('call_moved', 'ongoing', 'b');
    store.calls.setOwner('call_moved', 'a');
    recoverOrphanedCalls(deps, ['a'], false);
    expect(store.calls.get('acme', 'call_moved')!.call_status).toBe('ongoing');
  });
});
