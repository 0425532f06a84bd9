// The store suite: every repository the rooms use, run against both stores — the embedded SQLite
// one and PostgreSQL (a real server from Debian's packages, started here in a temporary directory).
// Each rule is checked the same way on both, including the ones that matter with several nodes:
// slots and claims taken by two stores at once on one database.
import { beforeAll, describe, expect, it } from 'vitest';
import { NumberTakenError } from '../../src/agents/repository.ts';
import { AgentConfigSchema, type AgentConfig } from '../../src/agents/schema.ts';
import { registeredRecord, type CallRecord } from '../../src/records/record.ts';
import { SecretBox, SecretKeyError } from '../../src/secrets/sealed.ts';
import type { Store } from '../../src/store/store.ts';
import { postgresBinaries } from '../helpers/postgres.ts';
import { NOW, storeOpeners, type OpenedStore } from './record-store-rules.ts';

interface Backend {
  name: string;
  /**
   * A new empty store, a second store on the same database (another node, or one given `secrets`), and raw SQL on it.
   */
  open(): Promise<OpenedStore>;
}

// The same openers as the record kinds' rules (record-store-rules.ts): everything opened is closed in afterAll.
const openers = storeOpeners('store-suite-');
const sqlite: Backend = { name: 'SQLite', open: openers.sqlite };
const postgres: Backend = { name: 'PostgreSQL', open: openers.postgres };

const found = postgresBinaries();
if ('missing' in found) console.warn(`PostgreSQL store suite skipped: ${found.missing}`);

const agentConfig = (extra: Partial<AgentConfig> = {}): AgentConfig =>
  AgentConfigSchema.parse({ agent_name: 'Desk', llm: { base_url: 'http://127.0.0.1:9/v1', model: 'm' }, ...extra });

const call = (callId: string, extra: Partial<CallRecord> = {}): CallRecord => ({
  ...registeredRecord({
    call_id: callId,
    agent_id: 'desk',
    agent_version: 1,
    call_type: 'web',
    call_from: null,
    call_to: null,
  }),
  ...extra,
});

describe.each([sqlite, ...('missing' in found ? [] : [postgres])])('the $name store', (backend) => {
  let store: Store;
  let peer: (secrets?: SecretBox) => Promise<Store>;
  let sql: (text: string, params?: unknown[]) => Promise<Record<string, unknown>[]>;
  beforeAll(async () => {
    ({ store, peer, sql } = await backend.open());
  }, 60_000);

  it('keeps call records: a read-modify-write, keyset pages with total_count and filters, owners, deletion', async () => {
    for (let i = 0; i < 5; i++)
      await store.calls.insert('acme', call(`call_list_${i}`), NOW + i, { ownerNode: 'node-a', streamSecretHash: 'h' });
    await store.calls.insert('globex', call('call_other'), NOW);
    const updated = await store.calls.update('acme', 'call_list_1', (r) => ({
      ...r,
      call_status: 'ongoing',
      start_timestamp: NOW + 100,
    }));
    expect(updated).toMatchObject({ call_status: 'ongoing', start_timestamp: NOW + 100 });
    expect(await store.calls.get('acme', 'call_list_1')).toEqual(updated);
    expect(await store.calls.update('acme', 'call_nope', (r) => r)).toBeUndefined();
    expect(await store.calls.get('globex', 'call_list_1')).toBeUndefined();
    expect(await store.calls.getForStream('call_list_2')).toMatchObject({ orgId: 'acme', streamSecretHash: 'h' });

    const first = await store.calls.list('acme', { filter: {}, order: 'ascending', limit: 2 });
    expect(first.totalCount).toBe(5);
    expect(first.calls.map((c) => c.call_id)).toEqual(['call_list_0', 'call_list_2']);
    const second = await store.calls.list('acme', {
      filter: {},
      order: 'ascending',
      limit: 2,
      paginationKey: first.nextCursor,
    });
    expect(second.calls.map((c) => c.call_id)).toEqual(['call_list_3', 'call_list_4']);
    const third = await store.calls.list('acme', {
      filter: {},
      order: 'ascending',
      limit: 2,
      paginationKey: second.nextCursor,
    });
    expect(third).toMatchObject({ nextCursor: null });
    expect(third.calls.map((c) => c.call_id)).toEqual(['call_list_1']); // sorted by its start once it connected
    expect(
      (
        await store.calls.list('acme', { filter: { call_status: ['ongoing'] }, order: 'descending', limit: 10 })
      ).calls.map((c) => c.call_id),
    ).toEqual(['call_list_1']);
    expect(
      (await store.calls.list('acme', { filter: { call_status: [] }, order: 'descending', limit: 10 })).totalCount,
    ).toBe(0);
    expect(
      (
        await store.calls.list('acme', {
          filter: { start_timestamp: { lower_threshold: NOW + 50 } },
          order: 'descending',
          limit: 10,
        })
      ).totalCount,
    ).toBe(1);

    expect(await store.calls.ownerOf('call_list_3')).toBe('node-a');
    // Admitted on the node its media reached, the call is that node's.
    expect(await store.calls.takeSlot('acme', 'call_list_3', 0, 'node-b')).toBe(true);
    expect(await store.calls.ownerOf('call_list_3')).toBe('node-b');
    expect(await store.calls.delete('acme', 'call_list_4')).toBe(true);
    expect(await store.calls.delete('acme', 'call_list_4')).toBe(false);
  });

  it('keeps the transcript of an ongoing call without touching the rest of its record or sending an event; not once the call is over', async () => {
    await store.webhooks.updateSettings('talk', { webhook_url: 'http://127.0.0.1:9/hook' });
    await store.calls.insert('talk', call('call_talk'), NOW);
    const started = await store.calls.update('talk', 'call_talk', (r) => ({
      ...r,
      call_status: 'ongoing',
      start_timestamp: NOW,
      latency: { e2e: { p50: 0.1 + 0.2 } } as never,
    }));
    const backlog = await store.webhooks.backlog();
    const said = [
      { role: 'agent' as const, content: 'Hello, how can I help?', start_at: 0.2, end_at: 1.75 },
      { role: 'user' as const, content: 'I’d like a cleaning — “Tuesday”.\n', start_at: 2.1, end_at: 3.456 },
    ];
    const items = [
      said[0]!,
      {
        role: 'tool_call_invocation' as const,
        tool_call_id: 't1',
        name: 'book',
        arguments: '{"day":"Tuesday"}',
        start_at: 3.5,
        end_at: 3.5,
      },
      said[1]!,
    ];
    expect(await store.calls.keepTranscript('talk', 'call_talk', said, items as never)).toBe(true);
    expect(await store.calls.get('talk', 'call_talk')).toEqual({
      ...started,
      transcript: said,
      transcript_with_tool_calls: items,
    });
    expect(await store.webhooks.backlog()).toBe(backlog);
    expect(await store.calls.keepTranscript('talk', 'call_nope', said, said)).toBe(false);
    expect(await store.calls.keepTranscript('globex', 'call_talk', said, said)).toBe(false);
    await store.calls.update('talk', 'call_talk', (r) => ({
      ...r,
      call_status: 'ended',
      end_timestamp: NOW + 5_000,
      disconnection_reason: 'user_hangup',
      transcript: said.slice(0, 1),
    }));
    expect(await store.calls.keepTranscript('talk', 'call_talk', said, said)).toBe(false);
    expect((await store.calls.get('talk', 'call_talk'))?.transcript).toEqual(said.slice(0, 1));
  });

  it("holds an organization's slots across nodes: counted and taken at once, the last one by one node only; a dead node's calls hold none", async () => {
    const other = await peer();
    const [nodeA, nodeB] = ['slot-node-a', 'slot-node-b'];
    await store.nodes.acquire(nodeA, 'epoch-a', NOW, NOW + 60_000, null);
    await store.nodes.acquire(nodeB, 'epoch-b', NOW, NOW + 1_000, null);
    for (let i = 0; i < 6; i++)
      await store.calls.insert('slots', call(`call_slot_${i}`), NOW, { ownerNode: i % 2 === 0 ? nodeA : nodeB });
    const taken = await Promise.all(
      Array.from({ length: 6 }, (_, i) => (i % 2 === 0 ? store : other).calls.takeSlot('slots', `call_slot_${i}`, 3)),
    );
    expect(taken.filter(Boolean)).toHaveLength(3);
    expect(await store.calls.slotsInUse('slots')).toBe(3);
    // A call that holds a slot keeps it when admitted again.
    const holder = `call_slot_${taken.indexOf(true)}`;
    expect(await other.calls.takeSlot('slots', holder, 3)).toBe(true);
    // Written only together with a slot: none left, nothing written.
    expect(await store.calls.insertHoldingSlot('slots', call('call_slot_new'), NOW, { ownerNode: nodeA }, 3)).toBe(
      false,
    );
    expect(await store.calls.get('slots', 'call_slot_new')).toBeUndefined();
    // node-b dies and a peer takes its lease over: its calls hold nothing.
    const heldByA = (await Promise.all([0, 2, 4].map((i) => store.calls.holdsSlot('slots', `call_slot_${i}`)))).filter(
      Boolean,
    ).length;
    expect(await other.nodes.forgetExpired(NOW + 2_000)).toBeGreaterThanOrEqual(1);
    expect(await store.calls.slotsInUse('slots')).toBe(heldByA);
    expect(await store.calls.insertHoldingSlot('slots', call('call_slot_new'), NOW, { ownerNode: nodeA }, 3)).toBe(
      heldByA < 3,
    );
    // An ended call frees its slot.
    const endedOne = `call_slot_${[0, 2, 4].find((i) => taken[i]) ?? 0}`;
    const before = await store.calls.slotsInUse('slots');
    await store.calls.update('slots', endedOne, (r) => ({ ...r, call_status: 'ended' }));
    expect(await store.calls.slotsInUse('slots')).toBe(heldByA > 0 ? before - 1 : before);
  });

  it("a stalled node taken for dead takes a new lease: its old calls' slots stay free (peers admitted calls into them), and one of them admitted again must find a free slot", async () => {
    const other = await peer();
    await store.nodes.acquire('stall-live', 'live-1', NOW, NOW + 60_000, null);
    await store.nodes.acquire('stall-node', 'stall-1', NOW, NOW + 1_000, null);
    await store.calls.insertHoldingSlot('stall', call('call_stall_old'), NOW, { ownerNode: 'stall-node' }, 2);
    await store.calls.insertHoldingSlot('stall', call('call_stall_old_2'), NOW, { ownerNode: 'stall-node' }, 2);
    expect(await store.calls.slotsInUse('stall')).toBe(2);
    // Its lease ran out: until a peer takes it over, the node may renew it, and its calls keep their slots.
    expect(
      await store.calls.insertHoldingSlot('stall', call('call_stall_x'), NOW, { ownerNode: 'stall-live' }, 2),
    ).toBe(false);
    // Taken over: the peer admits a call into a freed slot.
    expect(await other.nodes.forgetExpired(NOW + 2_000)).toBeGreaterThanOrEqual(1);
    expect(
      await other.calls.insertHoldingSlot('stall', call('call_stall_new'), NOW, { ownerNode: 'stall-live' }, 2),
    ).toBe(true);
    expect(await store.calls.slotsInUse('stall')).toBe(1);
    // The stalled node comes back under a new lease: its old calls do not count again.
    await store.nodes.acquire('stall-node', 'stall-2', NOW + 2_000, NOW + 60_000, null);
    expect(await store.calls.slotsInUse('stall')).toBe(1);
    // An old call whose media reaches it now is admitted as a new one would be: into the one free slot, then as its own
    // under the new lease; the next finds none.
    expect(await store.calls.takeSlot('stall', 'call_stall_old', 2, 'stall-node')).toBe(true);
    expect(await store.calls.slotsInUse('stall')).toBe(2);
    expect(await store.calls.takeSlot('stall', 'call_stall_old_2', 2, 'stall-node')).toBe(false);
    expect(await store.calls.slotsInUse('stall')).toBe(2);
    // Admitted again, a call that counts keeps its slot.
    expect(await store.calls.takeSlot('stall', 'call_stall_old', 2, 'stall-node')).toBe(true);
    expect(await store.calls.slotsInUse('stall')).toBe(2);
  });

  it('finds the calls no live node owns, in the statuses asked for', async () => {
    await store.calls.insert('orphans', call('call_orphan_live'), NOW, { ownerNode: 'node-live' });
    await store.calls.insert('orphans', call('call_orphan_dead'), NOW, { ownerNode: 'node-dead' });
    await store.calls.insert('orphans', call('call_orphan_none'), NOW);
    const orphaned = (await store.calls.listOrphaned(['registered'], ['node-live']))
      .filter((o) => o.orgId === 'orphans')
      .map((o) => o.record.call_id);
    expect(orphaned.sort()).toEqual(['call_orphan_dead', 'call_orphan_none']);
    expect(await store.calls.listOrphaned([], ['node-live'])).toEqual([]);
  });

  it("takes a call over only once its owner's lease is gone: a lease that ran out still holds its calls (and is a holder) until a peer takes it over, and then its holder can no longer renew it", async () => {
    const endIt = (r: CallRecord): CallRecord => ({
      ...r,
      call_status: 'error',
      disconnection_reason: 'error_service',
    });
    await store.nodes.acquire('node-f', 'epoch-1', NOW, NOW + 1_000, null);
    await store.calls.insert('fence', call('call_fenced'), NOW, { ownerNode: 'node-f' });
    await store.calls.insert('fence', call('call_of_none'), NOW);
    // Its lease ran out, but nobody took it over: the owner may still renew it, so its call stays its own.
    expect(await store.nodes.alive(NOW + 2_000)).not.toContain('node-f');
    expect((await store.calls.update('fence', 'call_fenced', endIt, { takeover: true }))!.call_status).toBe(
      'registered',
    );
    expect(await store.nodes.renew('node-f', 'epoch-1', NOW + 2_000, NOW + 3_000, null)).toBe(true);
    expect((await store.calls.update('fence', 'call_fenced', endIt, { takeover: true }))!.call_status).toBe(
      'registered',
    );
    // A call no node owns is anyone's to finish.
    expect((await store.calls.update('fence', 'call_of_none', endIt, { takeover: true }))!.call_status).toBe('error');

    // A peer takes the lease over once it ran out: the holder learns it when it renews, and the call is the peer's to
    // finish.
    const other = await peer();
    expect(await other.nodes.forgetExpired(NOW + 4_000)).toBeGreaterThanOrEqual(1);
    expect(await store.nodes.renew('node-f', 'epoch-1', NOW + 4_000, NOW + 5_000, null)).toBe(false);
    expect(await store.nodes.alive(NOW + 4_000)).not.toContain('node-f');
    // The node takes a new lease: calls of the old epoch stay takeable, calls of the new one are its own.
    await store.nodes.acquire('node-f', 'epoch-2', NOW + 4_000, NOW + 14_000, null);
    await store.calls.insert('fence', call('call_new_epoch'), NOW, { ownerNode: 'node-f' });
    expect((await store.calls.update('fence', 'call_new_epoch', endIt, { takeover: true }))!.call_status).toBe(
      'registered',
    );
    expect((await other.calls.update('fence', 'call_fenced', endIt, { takeover: true }))!.call_status).toBe('error');
    // A call whose media reached the node now is its own under the live epoch.
    await store.calls.insert('fence', call('call_moved'), NOW, { ownerNode: 'node-gone' });
    expect(await store.calls.takeSlot('fence', 'call_moved', 0, 'node-f')).toBe(true);
    expect((await other.calls.update('fence', 'call_moved', endIt, { takeover: true }))!.call_status).toBe(
      'registered',
    );
    await store.nodes.release('node-f', 'epoch-2');
    expect((await other.calls.update('fence', 'call_moved', endIt, { takeover: true }))!.call_status).toBe('error');
  });

  it('a renewal and a takeover of one lease racing: exactly one wins', async () => {
    const other = await peer();
    for (let i = 0; i < 10; i++) {
      await store.nodes.acquire('node-race', `epoch-${i}`, NOW, NOW + 1_000, null);
      // The lease ran out at NOW + 1_000; at NOW + 1_500 its holder renews while a peer takes it over.
      const [renewed, taken] = await Promise.all([
        store.nodes.renew('node-race', `epoch-${i}`, NOW + 1_500, NOW + 2_500, null),
        other.nodes.forgetExpired(NOW + 1_500),
      ]);
      expect(renewed).toBe(taken === 0);
      expect(await store.nodes.alive(NOW + 1_500)).toEqual(
        renewed ? expect.arrayContaining(['node-race']) : expect.not.arrayContaining(['node-race']),
      );
    }
  });

  it('keeps agent versions, publishes the newest, and gives an inbound number to one organization only', async () => {
    const v1 = await store.agents.insertVersion('acme', 'desk', agentConfig({ inbound_numbers: ['+15550009001'] }), {
      published: true,
      at: NOW,
    });
    const v2 = await store.agents.insertVersion(
      'acme',
      'desk',
      agentConfig({ agent_name: 'Desk 2', inbound_numbers: ['+15550009001'] }),
      { published: false, at: NOW + 1 },
    );
    expect([v1.version, v2.version]).toEqual([1, 2]);
    expect((await store.agents.newest('acme', 'desk'))?.version).toBe(2);
    expect((await store.agents.newestPublished('acme', 'desk'))?.version).toBe(1);
    expect((await store.agents.findByInboundNumber('+15550009001'))?.version).toBe(1);
    expect(await store.agents.publishNewest('acme', 'desk', NOW + 2)).toMatchObject({
      version: 2,
      isPublished: true,
      lastModified: NOW + 2,
    });
    expect((await store.agents.findByInboundNumber('+15550009001'))?.config.agent_name).toBe('Desk 2');
    expect((await store.agents.listNewest('acme')).map((a) => [a.agentId, a.version])).toEqual([['desk', 2]]);
    await expect(
      store.agents.insertVersion('globex', 'other', agentConfig({ inbound_numbers: ['+15550009001'] }), {
        published: true,
        at: NOW,
      }),
    ).rejects.toBeInstanceOf(NumberTakenError);
    // Versions written by two nodes at once are numbered one after the other.
    const other = await peer();
    const both = await Promise.all(
      [store, other].map((s) => s.agents.insertVersion('acme', 'race', agentConfig(), { published: true, at: NOW })),
    );
    expect(both.map((v) => v.version).sort()).toEqual([1, 2]);
    // A number no version lists any more is let go.
    await store.agents.insertVersion('acme', 'desk', agentConfig(), { published: true, at: NOW + 3 });
    expect(await store.agents.numberOwner('+15550009001')).toBeUndefined();
  });

  it('runs campaigns: claims within the concurrency by two schedulers at once, each task once; the last finish ends it, once', async () => {
    const other = await peer();
    const tasks = Array.from({ length: 6 }, (_, i) => ({
      callTo: `+1555000${i}`,
      presentationNumber: null,
      metadata: { i },
      dynamicVariables: {},
    }));
    await store.campaigns.insert(
      {
        id: 'cmp_suite',
        orgId: 'acme',
        kind: 'campaign',
        name: 'Suite',
        status: 'pending',
        agentId: 'desk',
        agentVersion: 1,
        fromNumber: '+1555',
        presentationNumber: null,
        concurrency: 3,
        totalCalls: 6,
        createdAt: NOW,
        scheduledAt: null,
      },
      tasks,
    );
    expect((await store.campaigns.runnable()).map((c) => c.id)).toContain('cmp_suite');
    const claims = await Promise.all(
      Array.from({ length: 6 }, async (_, i) => {
        const by = i % 2 ? 'sched-a' : 'sched-b';
        const got = await (i % 2 ? store : other).campaigns.claim('cmp_suite', by, `call_cmp_${i}`);
        return got ? { ...got, by } : undefined;
      }),
    );
    const claimed = claims.filter((c) => c !== undefined);
    expect(claimed).toHaveLength(3);
    expect(new Set(claimed.map((c) => c.task.seq)).size).toBe(3);
    expect(await store.campaigns.get('acme', 'campaign', 'cmp_suite')).toMatchObject({
      status: 'ongoing',
      activeCalls: 3,
    });
    // A claim given back waits again.
    await store.campaigns.unclaim(claimed[0]!.task.callId);
    expect((await store.campaigns.get('acme', 'campaign', 'cmp_suite'))?.activeCalls).toBe(2);
    // Neither scheduler holds a lease: seen from sched-a, sched-b's tasks are orphaned.
    const orphaned = (await store.campaigns.orphanedTasks(NOW, 1000, 'sched-a')).map((t) => t.callId).sort();
    expect(orphaned).toEqual(
      claimed
        .slice(1)
        .filter((c) => c.by === 'sched-b')
        .map((c) => c.task.callId)
        .sort(),
    );
    await store.campaigns.heartbeat('sched-b', NOW);
    expect(await store.campaigns.orphanedTasks(NOW, 1000, 'sched-a')).toEqual([]);
    // Every task finished, by both stores at once: counted once each, and the campaign ends once.
    for (let round = 0; round < 6; round++) {
      const next = await store.campaigns.claim('cmp_suite', 'sched-a', `call_cmp_r${round}`);
      if (next)
        await Promise.all(
          [store, other].map((s) =>
            s.campaigns.finishTask(next.task.callId, round % 2 === 0, 'user_hangup', NOW + round),
          ),
        );
    }
    await Promise.all(
      claimed
        .slice(1)
        .flatMap((c) => [store, other].map((s) => s.campaigns.finishTask(c.task.callId, false, 'dial_no_answer', NOW))),
    );
    const done = await store.campaigns.get('acme', 'campaign', 'cmp_suite');
    // Four claimed after the give-back (two of them connected), and the two claimed at first.
    expect(done).toMatchObject({ status: 'success', activeCalls: 0, completedCalls: 2, failedCalls: 4 });
    expect(done!.finishedAt).not.toBeNull();
    expect(await store.campaigns.callIds('cmp_suite')).toHaveLength(6);
    expect(await store.campaigns.cancel('acme', 'campaign', 'cmp_suite', NOW)).toMatchObject({ ok: false });
  });

  it("sends webhooks from an outbox written with the call's change: one sender per delivery, a call's events in order", async () => {
    await store.webhooks.updateSettings('hooks', { webhook_url: 'http://127.0.0.1:9/hook' });
    await store.calls.insert('hooks', call('call_hook'), NOW);
    await store.calls.update('hooks', 'call_hook', (r) => ({ ...r, call_status: 'ongoing', start_timestamp: NOW }));
    await store.calls.update('hooks', 'call_hook', (r) => ({
      ...r,
      call_status: 'ended',
      end_timestamp: NOW + 1000,
      disconnection_reason: 'user_hangup',
    }));
    expect(await store.webhooks.backlog()).toBeGreaterThanOrEqual(2);
    const other = await peer();
    const [a, b] = await Promise.all([store, other].map((s) => s.webhooks.claimDue(NOW, 10_000, 10)));
    const claimed = [...a!, ...b!].filter((d) => d.call_id === 'call_hook');
    // Only the call's oldest pending event is due; one sender has it.
    expect(claimed.map((d) => d.event)).toEqual(['call_started']);
    expect(claimed[0]!.secrets).toHaveLength(1);
    await store.webhooks.delivered(claimed[0]!.delivery_id, 200, NOW);
    const next = (await store.webhooks.claimDue(NOW, 10_000, 10)).filter((d) => d.call_id === 'call_hook');
    expect(next.map((d) => d.event)).toEqual(['call_ended']);
    await store.webhooks.attemptFailed(next[0]!.delivery_id, 500, 'the receiver answered HTTP 500', null);
    const page = await store.webhooks.list('hooks', { limit: 10 });
    expect(page.deliveries.map((d) => d.status).sort()).toEqual(['delivered', 'failed']);
    expect(await store.webhooks.redeliver('hooks', next[0]!.delivery_id, NOW)).toMatchObject({ status: 'pending' });
    const rotated = await store.webhooks.rotateSecret('hooks', NOW + 60_000);
    expect(rotated.previous_secret).not.toBeNull();
  });

  it('answers an idempotency key once: claimed, in progress, replayed, refused for another request, released', async () => {
    expect(await store.idempotency.claim('acme', 'key-1', 'fp', NOW)).toEqual({ kind: 'claimed' });
    expect(await store.idempotency.claim('acme', 'key-1', 'fp', NOW)).toEqual({ kind: 'in_progress' });
    await store.idempotency.finish('acme', 'key-1', { status: 201, body: '{"ok":true}' });
    expect(await store.idempotency.claim('acme', 'key-1', 'fp', NOW)).toEqual({
      kind: 'replay',
      answer: { status: 201, body: '{"ok":true}' },
    });
    expect(await store.idempotency.claim('acme', 'key-1', 'other', NOW)).toEqual({ kind: 'mismatch' });
    expect(await store.idempotency.claim('acme', 'key-2', 'fp', NOW)).toEqual({ kind: 'claimed' });
    await store.idempotency.release('acme', 'key-2');
    const other = await peer();
    const racing = await Promise.all([store, other].map((s) => s.idempotency.claim('acme', 'key-3', 'fp', NOW)));
    expect(racing.map((r) => r.kind).sort()).toEqual(['claimed', 'in_progress']);
  });

  it('counts requests per organization and minute for every node at once: one window, a new one after 60 s', async () => {
    const other = await peer();
    // Two nodes counting 10 requests each at once: 20 in one window, every count given once.
    const counts = await Promise.all(
      Array.from({ length: 20 }, (_, i) => (i % 2 === 0 ? store : other).rateWindows.hit('acme', NOW + i)),
    );
    expect(counts.map((w) => w.count).sort((a, b) => a - b)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
    expect(new Set(counts.map((w) => w.start))).toEqual(new Set([counts.find((w) => w.count === 1)!.start]));
    expect(await other.rateWindows.hit('globex', NOW)).toEqual({ start: NOW, count: 1 });
    const windowStart = counts.find((w) => w.count === 1)!.start;
    expect(await store.rateWindows.hit('acme', windowStart + 59_999)).toEqual({ start: windowStart, count: 21 });
    expect(await other.rateWindows.hit('acme', windowStart + 60_000)).toEqual({
      start: windowStart + 60_000,
      count: 1,
    });
  });

  it('keeps node leases with addresses, credits, web call tokens and carrier call ids', async () => {
    await store.nodes.acquire('node-x', 'epoch-x', NOW, NOW + 15_000, 'http://127.0.0.1:4001');
    await store.nodes.acquire('node-y', 'epoch-y', NOW - 20_000, NOW - 5_000, null);
    expect(await store.nodes.alive(NOW)).toContain('node-x');
    expect(await store.nodes.alive(NOW)).not.toContain('node-y');
    expect(await store.nodes.urlOf('node-x', NOW)).toBe('http://127.0.0.1:4001');
    expect(await store.nodes.forgetExpired(NOW)).toBeGreaterThanOrEqual(1);
    await store.nodes.release('node-x', 'epoch-x');
    expect(await store.nodes.urlOf('node-x', NOW)).toBeNull();

    await store.credits.initialize('acme', 100, NOW);
    await store.credits.initialize('acme', 500, NOW);
    await store.credits.debit('acme', 12.5, NOW);
    expect(await store.credits.balance('acme')).toBe(87.5);
    expect(await store.credits.balance('nobody')).toBeUndefined();

    await store.webCallTokens.issue('hash-1', 'acme', 'call_web', NOW + 60_000);
    const other = await peer();
    const taken = await Promise.all([store, other].map((s) => s.webCallTokens.take('hash-1')));
    expect(taken.filter(Boolean)).toEqual([{ orgId: 'acme', callId: 'call_web', expiresAt: NOW + 60_000 }]);

    await store.carrierCalls.record('call_out', 'twilio', 'CA1', NOW);
    await store.carrierCalls.record('call_out', 'twilio', 'CA2', NOW);
    expect(await store.carrierCalls.carrierCallId('call_out')).toBe('CA2');
    expect(await store.carrierCalls.callIdOf('twilio', 'CA2')).toBe('call_out');
  });

  it('keeps agent tests in the order added and runs by their node', async () => {
    const test = (id: string) => ({
      test_id: id,
      agent_id: 'desk',
      name: id,
      caller: { script: [{ say: 'Hi.' }], voice: 'rms' as const, after_last_step_ms: 1000 },
      expect: {},
      dynamic_variables: {},
      created_at: NOW,
      updated_at: NOW,
    });
    await store.agentTests.insertTest('acme', test('test_b'));
    await store.agentTests.insertTest('acme', test('test_a'));
    expect((await store.agentTests.listTests('acme', 'desk')).map((t) => t.test_id)).toEqual(['test_b', 'test_a']);
    expect(await store.agentTests.updateTest('acme', { ...test('test_a'), name: 'renamed' })).toBe(true);
    expect((await store.agentTests.getTest('acme', 'test_a'))?.name).toBe('renamed');
    expect(await store.agentTests.deleteTest('acme', 'test_b')).toBe(true);
    const run = {
      run_id: 'run_1',
      agent_id: 'desk',
      agent_version: 1,
      status: 'running' as const,
      concurrency: 1,
      created_at: NOW,
      ended_at: null,
      results: [],
      summary: { total: 0, passed: 0, failed: 0, errored: 0, wall_ms: null, audio_ms: 0 },
    };
    await store.agentTests.insertRun('acme', run, 'node-a');
    expect(await store.agentTests.orphanedRuns(['node-a'])).toEqual([]);
    expect((await store.agentTests.orphanedRuns([])).map((r) => r.run.run_id)).toEqual(['run_1']);
    expect(await store.agentTests.updateRun('acme', 'run_1', (r) => ({ ...r, status: 'passed' }))).toMatchObject({
      status: 'passed',
    });
    expect((await store.agentTests.lastFinishedRunBelow('acme', 'desk', 2))?.run_id).toBe('run_1');
    expect((await store.agentTests.listRuns('acme', 'desk', 5)).map((r) => r.run_id)).toEqual(['run_1']);
  });

  it('keeps secrets sealed at rest, reads records stored in plaintext before, seals them at start, and refuses another key', async () => {
    const secretConfig = agentConfig({
      llm: { base_url: 'https://m.example.com/v1', model: 'm', api_key: 'sk-at-rest-1', temperature: 1, stream: true },
    });
    await store.agents.insertVersion('acme', 'sealed', secretConfig, { published: true, at: NOW });
    const [row] = await sql("SELECT config FROM agent_versions WHERE org_id = 'acme' AND agent_id = 'sealed'");
    expect(String(row!.config)).not.toContain('sk-at-rest-1');
    expect((await store.agents.newest('acme', 'sealed'))?.config.llm.api_key).toBe('sk-at-rest-1');

    // As the code before sealing wrote them: secrets in the clear.
    const legacy = agentConfig({
      llm: { base_url: 'https://m.example.com/v1', model: 'm', api_key: 'sk-legacy-2', temperature: 1, stream: true },
    });
    await sql(
      "INSERT INTO agent_versions (org_id, agent_id, version, is_published, created_at, config) VALUES ('acme', 'legacy', 1, ?, ?, ?)",
      [backend.name === 'SQLite' ? 1 : true, NOW, JSON.stringify(legacy)],
    );
    const legacyTest = {
      test_id: 'test_legacy',
      agent_id: 'legacy',
      name: 'l',
      caller: {
        persona: 'p',
        goal: 'g',
        max_turns: 2,
        voice: 'rms',
        caller_llm: {
          base_url: 'https://m.example.com/v1',
          model: 'm',
          api_key: 'sk-legacy-3',
          temperature: 1,
          stream: true,
        },
      },
      expect: {},
      dynamic_variables: {},
      created_at: NOW,
      updated_at: NOW,
    };
    await sql(
      "INSERT INTO agent_tests (test_id, org_id, agent_id, created_at, test) VALUES ('test_legacy', 'acme', 'legacy', ?, ?)",
      [NOW, JSON.stringify(legacyTest)],
    );
    expect((await store.agents.newest('acme', 'legacy'))?.config.llm.api_key).toBe('sk-legacy-2');
    expect(await store.agentTests.getTest('acme', 'test_legacy')).toEqual(legacyTest);

    expect(await store.sealStoredSecrets()).toBe(2);
    expect(await store.sealStoredSecrets()).toBe(0);
    const rows = [
      ...(await sql("SELECT config AS text FROM agent_versions WHERE agent_id = 'legacy'")),
      ...(await sql("SELECT test AS text FROM agent_tests WHERE test_id = 'test_legacy'")),
    ];
    for (const r of rows) expect(String(r.text)).not.toMatch(/sk-legacy/);
    expect((await store.agents.newest('acme', 'legacy'))?.config).toEqual(legacy);
    expect(await store.agentTests.getTest('acme', 'test_legacy')).toEqual(legacyTest);

    const stranger = await peer(new SecretBox(Buffer.alloc(32, 9)));
    await expect(stranger.sealStoredSecrets()).rejects.toThrow(SecretKeyError);
    await expect(stranger.agents.newest('acme', 'sealed')).rejects.toThrow(/give every node the same SECRETS_KEY/);
  });
});
