import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SqliteNodeLeases } from '../../src/store/nodes.ts';
import { createHarness, settle, tasks, type Harness } from './harness.ts';

const base = {
  name: 'Spring',
  agentId: 'bot',
  agentVersion: 'production' as const,
  from: '+14155550100',
  presentationNumber: null,
  scheduledAt: null,
};

function active(h: Harness, campaignId: string): string[] {
  return (
    h.db
      .prepare("SELECT call_id FROM campaign_tasks WHERE campaign_id = ? AND state = 'active' ORDER BY seq")
      .all(campaignId) as { call_id: string }[]
  ).map((r) => r.call_id);
}

describe('campaign scheduler', () => {
  it('never has more calls under way than the concurrency and fills each freed slot with the next task', async () => {
    const h = await createHarness();
    h.newScheduler().start();
    const c = await h.campaigns.create('acme', { ...base, concurrency: 3, tasks: tasks(7) });
    expect(c.status).toBe('pending');
    await settle();
    expect(h.dialer.dialed.map((d) => d.to)).toEqual(tasks(3).map((t) => t.callTo));
    expect(await h.campaigns.get('acme', c.id)).toMatchObject({
      status: 'ongoing',
      active_concurrency: 3,
      completed_calls: 0,
      failed_calls: 0,
    });

    const [first, second] = active(h, c.id);
    h.answer(first!);
    h.hangUp(first!);
    await h.noAnswer(second!);
    await settle();
    expect(h.dialer.dialed).toHaveLength(5);
    expect(await h.campaigns.get('acme', c.id)).toMatchObject({
      status: 'ongoing',
      active_concurrency: 3,
      completed_calls: 1,
      failed_calls: 1,
    });
  });

  it('counts connected calls as completed and never-connected ones as failed, then ends success with finished_at', async () => {
    const h = await createHarness();
    h.newScheduler().start();
    h.dialer.refuse.add(tasks(4)[3]!.callTo);
    const c = await h.campaigns.create('acme', { ...base, concurrency: 4, tasks: tasks(4) });
    await settle();
    expect(await h.campaigns.get('acme', c.id)).toMatchObject({ failed_calls: 1, active_concurrency: 3 });
    const [a, b, d] = active(h, c.id);
    h.answer(a!);
    h.answer(b!);
    await settle();
    expect(await h.campaigns.get('acme', c.id)).toMatchObject({
      status: 'ongoing',
      active_concurrency: 3,
      completed_calls: 0,
    });
    h.hangUp(a!);
    h.hangUp(b!);
    h.clock.t += 5_000;
    await h.noAnswer(d!);
    await settle();
    const done = await h.campaigns.get('acme', c.id);
    expect(done).toMatchObject({
      status: 'success',
      completed_calls: 2,
      failed_calls: 2,
      active_concurrency: 0,
      total_calls: 4,
    });
    expect(done.finished_at).toBe(new Date(h.clock.t).toISOString());
  });

  it('ends fail when no call connected', async () => {
    const h = await createHarness();
    h.newScheduler().start();
    for (const t of tasks(3)) h.dialer.refuse.add(t.callTo);
    const c = await h.campaigns.create('acme', { ...base, concurrency: 2, tasks: tasks(3) });
    await settle();
    expect(await h.campaigns.get('acme', c.id)).toMatchObject({ status: 'fail', failed_calls: 3, completed_calls: 0 });
  });

  it('treats a call refused for the organization concurrency limit or balance as failed with that reason', async () => {
    const h = await createHarness();
    h.newScheduler().start();
    const c = await h.campaigns.create('acme', { ...base, concurrency: 2, tasks: tasks(2) });
    await settle();
    const [a, b] = active(h, c.id);
    await h.calls.endIfRegistered(a!, 'not_connected', 'concurrency_limit_reached', 'limit');
    await h.calls.endIfRegistered(b!, 'not_connected', 'insufficient_balance', 'balance');
    await settle();
    expect(await h.campaigns.get('acme', c.id)).toMatchObject({ status: 'fail', failed_calls: 2 });
    const reasons = h.db.prepare('SELECT reason FROM campaign_tasks WHERE campaign_id = ? ORDER BY seq').all(c.id);
    expect(reasons).toEqual([{ reason: 'concurrency_limit_reached' }, { reason: 'insufficient_balance' }]);
  });

  it("a campaign at the organization's limit waits instead of failing its tasks", async () => {
    const h = await createHarness(':memory:', { maxConcurrentCalls: 2 });
    h.newScheduler().start();
    // An API call of the same organization rings: one of its two slots is taken.
    const api = await h.calls.createOutbound('acme', {
      agentId: 'bot',
      agentVersion: 'production',
      from: base.from,
      to: '+14155559999',
      presentationNumber: null,
      metadata: {},
      dynamicVariables: {},
    });
    const c = await h.campaigns.create('acme', { ...base, concurrency: 3, tasks: tasks(5) });
    await settle();
    expect(await h.campaigns.get('acme', c.id)).toMatchObject({
      status: 'ongoing',
      active_concurrency: 1,
      failed_calls: 0,
    });
    expect(await h.limits.slotsInUse('acme')).toBe(2);

    await h.noAnswer(api.call_id); // its slot frees: the campaign takes it at once
    await settle();
    expect(await h.campaigns.get('acme', c.id)).toMatchObject({ active_concurrency: 2, failed_calls: 0 });
    for (let guard = 0; guard < 10 && (await h.campaigns.get('acme', c.id)).finished_at === null; guard++) {
      const [next] = active(h, c.id);
      h.answer(next!);
      h.hangUp(next!);
      await settle();
      expect(await h.limits.slotsInUse('acme')).toBeLessThanOrEqual(2);
    }
    expect(await h.campaigns.get('acme', c.id)).toMatchObject({
      status: 'success',
      completed_calls: 5,
      failed_calls: 0,
      active_concurrency: 0,
    });
    expect(h.dialer.dialed).toHaveLength(6);
    const reasons = h.db.prepare('SELECT DISTINCT reason FROM campaign_tasks WHERE campaign_id = ?').all(c.id);
    expect(reasons).toEqual([{ reason: 'user_hangup' }]);
  });

  it("a batch at the organization's limit waits too; a slot freed out of its sight is taken on its next tick", async () => {
    const h = await createHarness(':memory:', { maxConcurrentCalls: 1 });
    const scheduler = h.newScheduler();
    scheduler.start();
    const web = await h.calls.register('acme', await h.agents.resolve('acme', 'bot', 'production'), {
      call_type: 'web',
      call_from: null,
      call_to: null,
      metadata: {},
      dynamic_variables: {},
    });
    const ack = await h.campaigns.createBatch('acme', {
      name: 'B',
      agentId: 'bot',
      agentVersion: 'production',
      from: base.from,
      tasks: tasks(2),
    });
    await settle();
    expect(h.dialer.dialed).toHaveLength(0);
    expect(await h.campaigns.getBatch('acme', ack.batch_id)).toMatchObject({
      status: 'queued',
      failed_calls: 0,
      call_ids: [],
    });
    // Ended with no event here (another process, say): only the store tells.
    h.callRepo.update('acme', web.record.call_id, (r) => ({
      ...r,
      call_status: 'not_connected',
      disconnection_reason: 'dial_no_answer',
    }));
    await scheduler.pass();
    await settle();
    const [first] = (await h.campaigns.getBatch('acme', ack.batch_id)).call_ids;
    expect(h.dialer.dialed).toHaveLength(1);
    h.answer(first!);
    h.hangUp(first!);
    await settle();
    const [, second] = (await h.campaigns.getBatch('acme', ack.batch_id)).call_ids;
    h.answer(second!);
    h.hangUp(second!);
    await settle();
    expect(await h.campaigns.getBatch('acme', ack.batch_id)).toMatchObject({
      status: 'completed',
      completed_calls: 2,
      failed_calls: 0,
    });
  });

  it('gives every call the campaign_id, the task metadata and dynamic_variables and the agent version fixed at creation', async () => {
    const h = await createHarness();
    h.newScheduler().start();
    const c = await h.campaigns.create('acme', { ...base, concurrency: 1, tasks: tasks(1) });
    await settle();
    const record = await h.calls.get('acme', active(h, c.id)[0]!);
    expect(record).toMatchObject({
      campaign_id: c.id,
      batch_id: null,
      call_type: 'outbound',
      call_from: base.from,
      call_to: tasks(1)[0]!.callTo,
      metadata: { row: 0 },
      dynamic_variables: { name: 'Person 0' },
      agent_version: c.agent_version,
    });
  });

  it('keeps a campaign with a future scheduled_at in draft until that time, then runs it', async () => {
    const h = await createHarness();
    const scheduler = h.newScheduler();
    scheduler.start();
    const c = await h.campaigns.create('acme', {
      ...base,
      concurrency: 1,
      scheduledAt: h.clock.t + 60_000,
      tasks: tasks(1),
    });
    await settle();
    expect((await h.campaigns.get('acme', c.id)).status).toBe('draft');
    expect(h.dialer.dialed).toHaveLength(0);
    h.clock.t += 60_000;
    scheduler.kick();
    await settle();
    expect((await h.campaigns.get('acme', c.id)).status).toBe('ongoing');
    expect(h.dialer.dialed).toHaveLength(1);
  });

  it('on cancel starts no new call; calls under way finish and still count', async () => {
    const h = await createHarness();
    h.newScheduler().start();
    const c = await h.campaigns.create('acme', { ...base, concurrency: 2, tasks: tasks(5) });
    await settle();
    const canceled = await h.campaigns.cancel('acme', c.id);
    expect(canceled).toMatchObject({ status: 'canceled', active_concurrency: 2 });
    expect(canceled.finished_at).not.toBeNull();
    const [a, b] = active(h, c.id);
    h.answer(a!);
    h.hangUp(a!);
    await h.noAnswer(b!);
    await settle();
    expect(h.dialer.dialed).toHaveLength(2);
    expect(await h.campaigns.get('acme', c.id)).toMatchObject({
      status: 'canceled',
      completed_calls: 1,
      failed_calls: 1,
      active_concurrency: 0,
    });
    await expect(h.campaigns.cancel('acme', c.id)).rejects.toThrow(expect.objectContaining({ code: 'CONFLICT' }));
  });

  it("a task whose organization's last slot another process took since the pass looked waits again: no call record, no count, no dial", async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'sched-')), 'shared.db');
    const one = await createHarness(file, { maxConcurrentCalls: 1 });
    const two = await createHarness(file, { maxConcurrentCalls: 1 });
    const c = await one.campaigns.create('acme', { ...base, concurrency: 2, tasks: tasks(2) });
    // The other process's call holds the one slot; this pass read the count just before it was taken.
    const theirs = await two.calls.createOutbound('acme', {
      agentId: 'bot',
      agentVersion: 'production',
      from: base.from,
      to: '+14155559999',
      presentationNumber: null,
      metadata: {},
      dynamicVariables: {},
    });
    one.calls.hasFreeSlot = async () => true;
    const scheduler = one.newScheduler();
    scheduler.start();
    await settle();
    expect(one.dialer.dialed).toHaveLength(0);
    expect(await one.campaigns.get('acme', c.id)).toMatchObject({
      status: 'ongoing',
      active_concurrency: 0,
      completed_calls: 0,
      failed_calls: 0,
    });
    expect(one.db.prepare('SELECT count(*) AS n FROM calls WHERE campaign_id IS NOT NULL').get()).toEqual({ n: 0 });
    expect(
      one.db.prepare('SELECT state, call_id FROM campaign_tasks WHERE campaign_id = ? ORDER BY seq').all(c.id),
    ).toEqual([
      { state: 'pending', call_id: null },
      { state: 'pending', call_id: null },
    ]);
    // The slot frees: the next pass dials the first task.
    await two.noAnswer(theirs.call_id);
    delete (one.calls as { hasFreeSlot?: unknown }).hasFreeSlot;
    await scheduler.pass();
    await settle();
    expect(one.dialer.dialed.map((d) => d.to)).toHaveLength(1);
    expect(await one.campaigns.get('acme', c.id)).toMatchObject({ active_concurrency: 1, failed_calls: 0 });
  });

  it('two schedulers on one database never dial the same task', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'sched-')), 'shared.db');
    const one = await createHarness(file);
    const two = await createHarness(file);
    const c = await one.campaigns.create('acme', { ...base, concurrency: 40, tasks: tasks(40) });
    const s1 = one.newScheduler();
    const s2 = two.newScheduler();
    s1.start();
    s2.start();
    // Interleave passes as two processes would.
    for (let i = 0; i < 5; i++) {
      await s1.pass();
      await s2.pass();
      await settle();
    }
    const numbers = [...one.dialer.dialed, ...two.dialer.dialed].map((d) => d.to);
    expect(numbers).toHaveLength(40);
    expect(new Set(numbers).size).toBe(40);
    expect(one.dialer.dialed.length).toBeGreaterThan(0);
    expect(await one.campaigns.get('acme', c.id)).toMatchObject({ active_concurrency: 40 });
  });

  it('finishes the tasks of a scheduler that died with error_service once its lease expires, and the campaign goes on', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'sched-')), 'crash.db');
    const dead = await createHarness(file);
    const c = await dead.campaigns.create('acme', { ...base, concurrency: 2, tasks: tasks(4) });
    dead.newScheduler().start(); // claims two tasks, then the "process" is gone without stopping
    await settle();
    const [a, b] = active(dead, c.id);
    dead.answer(a!); // one call had connected, the other was still ringing

    const next = await createHarness(file);
    next.clock.t = dead.clock.t + 500;
    const scheduler = next.newScheduler({ leaseMs: 1_000 });
    scheduler.start();
    await settle();
    expect(next.dialer.dialed).toHaveLength(0); // lease still valid: nothing is touched

    next.clock.t += 1_000;
    await scheduler.pass();
    await settle();
    expect(await next.calls.get('acme', a!)).toMatchObject({
      call_status: 'error',
      disconnection_reason: 'error_service',
    });
    expect(await next.calls.get('acme', b!)).toMatchObject({
      call_status: 'error',
      disconnection_reason: 'error_service',
      duration_ms: 0,
    });
    expect(await next.campaigns.get('acme', c.id)).toMatchObject({
      status: 'ongoing',
      completed_calls: 1,
      failed_calls: 1,
      active_concurrency: 2,
    });
    expect(next.dialer.dialed.map((d) => d.to)).toEqual(
      tasks(4)
        .slice(2)
        .map((t) => t.callTo),
    );
  });

  it("never ends a peer's calls because its scheduler's lease ran out while the node serving them holds its lease; once that lease is taken over, they end", async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'sched-')), 'stalled.db');
    const stalled = await createHarness(file, { nodeId: 'node-b' });
    const leases = new SqliteNodeLeases(stalled.db);
    leases.acquire('node-b', 'epoch-b', stalled.clock.t, stalled.clock.t + 60_000, null);
    const c = await stalled.campaigns.create('acme', { ...base, concurrency: 2, tasks: tasks(2) });
    stalled.newScheduler().start(); // claims both tasks, then its scheduler stops beating (a busy or paused process)
    await settle();
    const [a, b] = active(stalled, c.id);
    stalled.answer(a!); // one call is under way, the other rings

    const peer = await createHarness(file, { nodeId: 'node-a' });
    peer.clock.t = stalled.clock.t + 2_000;
    const scheduler = peer.newScheduler({ leaseMs: 1_000 });
    scheduler.start();
    await settle();
    await scheduler.pass();
    await settle();
    expect(await peer.calls.get('acme', a!)).toMatchObject({ call_status: 'ongoing', disconnection_reason: null });
    expect(await peer.calls.get('acme', b!)).toMatchObject({ call_status: 'registered' });
    expect(await peer.campaigns.get('acme', c.id)).toMatchObject({
      completed_calls: 0,
      failed_calls: 0,
      active_concurrency: 2,
    });

    // The node's lease ran out too and a peer took it over: now its calls are the peer's to end.
    expect(leases.forgetExpired(stalled.clock.t + 120_000)).toBe(1);
    await scheduler.pass();
    await settle();
    expect(await peer.calls.get('acme', a!)).toMatchObject({
      call_status: 'error',
      disconnection_reason: 'error_service',
    });
    expect(await peer.calls.get('acme', b!)).toMatchObject({
      call_status: 'error',
      disconnection_reason: 'error_service',
    });
    expect(await peer.campaigns.get('acme', c.id)).toMatchObject({
      completed_calls: 1,
      failed_calls: 1,
      active_concurrency: 0,
    });
  });

  it('gives a task back when its scheduler died after claiming it but before its call was written: it is dialed once, by the next', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'sched-')), 'claimed.db');
    const dead = await createHarness(file);
    const c = await dead.campaigns.create('acme', { ...base, concurrency: 1, tasks: tasks(1) });
    // The claim committed, then the process died: no call record, no dial.
    expect(dead.repo.claim(c.id, 'sched-dead', 'call_never_written')).toBeDefined();

    const next = await createHarness(file);
    next.clock.t = dead.clock.t + 2_000;
    const scheduler = next.newScheduler({ leaseMs: 1_000 });
    scheduler.start();
    await settle();
    await scheduler.pass();
    await settle();
    expect(await next.callRepo.get('acme', 'call_never_written')).toBeUndefined();
    expect(next.dialer.dialed.map((d) => d.to)).toEqual([tasks(1)[0]!.callTo]);
    expect(await next.campaigns.get('acme', c.id)).toMatchObject({
      status: 'ongoing',
      failed_calls: 0,
      active_concurrency: 1,
    });
  });

  it('on a clean stop ends its own calls under way with error_service', async () => {
    const h = await createHarness();
    const scheduler = h.newScheduler();
    scheduler.start();
    const c = await h.campaigns.create('acme', { ...base, concurrency: 1, tasks: tasks(2) });
    await settle();
    const [a] = active(h, c.id);
    await scheduler.stop();
    expect(await h.calls.get('acme', a!)).toMatchObject({
      call_status: 'error',
      disconnection_reason: 'error_service',
    });
    expect(await h.campaigns.get('acme', c.id)).toMatchObject({
      status: 'ongoing',
      failed_calls: 1,
      active_concurrency: 0,
    });
  });

  it('once halted for shutdown claims nothing more, while calls under way are still counted', async () => {
    const h = await createHarness();
    const scheduler = h.newScheduler();
    scheduler.start();
    const c = await h.campaigns.create('acme', { ...base, concurrency: 1, tasks: tasks(3) });
    await settle();
    scheduler.halt();
    const [a] = active(h, c.id);
    await h.noAnswer(a!);
    await settle();
    expect(h.dialer.dialed).toHaveLength(1);
    expect(await h.campaigns.get('acme', c.id)).toMatchObject({
      status: 'ongoing',
      failed_calls: 1,
      active_concurrency: 0,
    });
  });

  it('runs a batch with the server default concurrency and lists its call ids in task order', async () => {
    const h = await createHarness();
    h.newScheduler().start();
    const ack = await h.campaigns.createBatch('acme', {
      name: 'B',
      agentId: 'bot',
      agentVersion: 'production',
      from: base.from,
      tasks: tasks(5),
    });
    expect(ack).toMatchObject({ status: 'queued', total_tasks: 5 });
    expect((await h.campaigns.getBatch('acme', ack.batch_id)).status).toBe('queued');
    await settle();
    const batch = await h.campaigns.getBatch('acme', ack.batch_id);
    expect(batch).toMatchObject({ status: 'processing', completed_calls: 0, failed_calls: 0 });
    expect(batch.call_ids).toHaveLength(3);
    expect(await h.calls.get('acme', batch.call_ids[0]!)).toMatchObject({ batch_id: ack.batch_id, campaign_id: null });
    for (const id of batch.call_ids) await h.noAnswer(id);
    await settle();
    const [x, y] = (await h.campaigns.getBatch('acme', ack.batch_id)).call_ids.slice(3);
    h.answer(x!);
    h.hangUp(x!);
    await h.noAnswer(y!);
    await settle();
    expect(await h.campaigns.getBatch('acme', ack.batch_id)).toMatchObject({
      status: 'completed',
      completed_calls: 1,
      failed_calls: 4,
    });
  });
});
