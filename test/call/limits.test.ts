// The organization's concurrent-call limit counts every call from its registration (ringing, or
// waiting for its media stream) until it ends, in every process sharing the store, and every way
// a call can end without connecting gives its slot back.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { OrgLimits } from '../../src/call/limits.ts';
import { registeredRecord } from '../../src/records/record.ts';
import { openStore } from '../../src/store/store.ts';
import type { ActiveCall } from '../../src/call/registry.ts';
import { ADMISSION_MESSAGES, type OutboundCallRequest } from '../../src/records/service.ts';
import { StreamDeadlines } from '../../src/records/stream-deadlines.ts';
import { CallOutcomes } from '../../src/carriers/outcomes.ts';
import { ManualTimers } from '../../src/timers.ts';
import { WEB_TOKEN_TTL_MS, WebCallTokens } from '../../src/transports/web/tokens.ts';
import { SqliteWebCallTokens } from '../../src/store/web-tokens.ts';
import { promised } from '../../src/store/promised.ts';
import { createHarness, settle, type Harness } from '../campaigns/harness.ts';

const outbound = (to = '+14155550111'): OutboundCallRequest => ({
  agentId: 'bot',
  agentVersion: 'production',
  from: '+14155550100',
  to,
  presentationNumber: null,
  metadata: {},
  dynamicVariables: {},
});

/** A web call as POST /v2/web-calls registers it. */
async function registerWeb(h: Harness): Promise<string> {
  const { record } = await h.calls.register('acme', await agentVersion(h), {
    call_type: 'web',
    call_from: null,
    call_to: null,
    metadata: {},
    dynamic_variables: {},
  });
  return record.call_id;
}

const agentVersion = (h: Harness) => h.agents.resolve('acme', 'bot', 'production');

/** What CallManager does once a stream opened and the call was admitted: a session runs it. */
function connect(h: Harness, callId: string): { end(): void } {
  let finish!: () => void;
  const finished = new Promise<void>((resolve) => (finish = resolve));
  const active: ActiveCall = {
    callId,
    orgId: 'acme',
    callType: 'outbound',
    requestEnd: () => undefined,
    voicemailDetected: () => undefined,
    transferAnswered: () => undefined,
    transferFailed: () => null,
    returnStream: () => false,
    consultFailed: () => undefined,
    carrierEnded: () => undefined,
    say: () => undefined,
    addContext: () => undefined,
    listen: () => () => undefined,
    finished,
  };
  h.registry.add(active);
  h.answer(callId);
  return {
    end() {
      h.hangUp(callId);
      finish();
    },
  };
}

/** A new outbound call of the organization: admitted (ringing) or refused at once. */
async function tryCall(h: Harness): Promise<string> {
  return (await h.calls.createOutbound('acme', outbound())).call_status;
}

describe('organization concurrent-call limit', () => {
  it("ringing calls count against the organization's concurrent-call limit", async () => {
    const h = await createHarness(':memory:', { maxConcurrentCalls: 2 });
    const first = await h.calls.createOutbound('acme', outbound('+14155550111'));
    const second = await h.calls.createOutbound('acme', outbound('+14155550112'));
    // Dialled, not answered: both ring.
    expect([first.call_status, second.call_status]).toEqual(['registered', 'registered']);
    const third = await h.calls.createOutbound('acme', outbound('+14155550113'));
    expect(third).toMatchObject({
      call_status: 'not_connected',
      disconnection_reason: 'concurrency_limit_reached',
      disconnection_message: ADMISSION_MESSAGES.concurrency_limit_reached,
      duration_ms: 0,
    });
    expect(h.dialer.dialed.map((d) => d.to)).toEqual(['+14155550111', '+14155550112']);
    // The record of the refused call is still kept.
    expect((await h.calls.get('acme', third.call_id)).call_status).toBe('not_connected');
  });

  it('a web call waiting for its browser counts too', async () => {
    const h = await createHarness(':memory:', { maxConcurrentCalls: 1 });
    await registerWeb(h);
    expect(await tryCall(h)).toBe('not_connected');
  });

  it('a ringing call is admitted on its own slot when it connects, while a newcomer is refused', async () => {
    const h = await createHarness(':memory:', { maxConcurrentCalls: 1 });
    const ringing = await h.calls.createOutbound('acme', outbound());
    // CallManager.connect asks again as the stream opens: the call holds its slot already.
    expect(await h.limits.admit('acme', ringing.call_id)).toBeNull();
    connect(h, ringing.call_id);
    expect(await h.limits.slotsInUse('acme')).toBe(1);
    const web = await registerWeb(h);
    expect(await h.limits.admit('acme', web)).toBe('concurrency_limit_reached');
  });

  it('a web call registered while the organization is full waits for its stream: admitted then if a slot freed, else refused', async () => {
    const h = await createHarness(':memory:', { maxConcurrentCalls: 1 });
    const running = connect(h, (await h.calls.createOutbound('acme', outbound())).call_id);
    const web = await registerWeb(h);
    expect(await h.limits.slotsInUse('acme')).toBe(1);
    expect(await h.limits.admit('acme', web)).toBe('concurrency_limit_reached');
    running.end();
    await settle();
    const later = await registerWeb(h);
    expect(await h.limits.slotsInUse('acme')).toBe(1); // the later web call took the freed slot
    expect(await h.limits.admit('acme', later)).toBeNull();
  });

  describe('a call that never connects frees its slot', () => {
    const endings: [string, (h: Harness, callId: string) => void][] = [
      ['the carrier reports no answer', (h, id) => new CallOutcomes(h.calls, h.registry).noAnswer(id)],
      ['the carrier reports a failure', (h, id) => new CallOutcomes(h.calls, h.registry).failed(id, 'busy')],
      ['an answering machine took it', (h, id) => new CallOutcomes(h.calls, h.registry).machineAnswered(id)],
      ['the carrier completed it without a stream', (h, id) => new CallOutcomes(h.calls, h.registry).completed(id)],
      ['its campaign scheduler died', (h, id) => h.calls.endAbandoned(id, 'abandoned')],
      // Ended where this process saw no event (another process, say): the store is the truth.
      [
        'its record ended out of sight',
        (h, id) =>
          h.callRepo.update('acme', id, (r) => ({
            ...r,
            call_status: 'not_connected',
            disconnection_reason: 'dial_no_answer',
          })),
      ],
    ];

    it.each(endings)('when %s', async (_, end) => {
      const h = await createHarness(':memory:', { maxConcurrentCalls: 1 });
      const ringing = await h.calls.createOutbound('acme', outbound());
      expect(await tryCall(h)).toBe('not_connected');
      end(h, ringing.call_id);
      expect(await tryCall(h)).toBe('registered');
    });

    it('when the carrier refuses the dial or the dialer fails', async () => {
      const h = await createHarness(':memory:', { maxConcurrentCalls: 1 });
      h.dialer.refuse.add('+14155550999');
      expect((await h.calls.createOutbound('acme', outbound('+14155550999'))).disconnection_reason).toBe('dial_failed');
      vi.spyOn(h.dialer, 'dial').mockRejectedValueOnce(new Error('carrier down'));
      expect((await h.calls.createOutbound('acme', outbound())).disconnection_reason).toBe('error_service');
      expect(await h.limits.slotsInUse('acme')).toBe(0);
      expect(await tryCall(h)).toBe('registered');
    });

    it('when its media stream never opens', async () => {
      const h = await createHarness(':memory:', { maxConcurrentCalls: 1 });
      const timers = new ManualTimers(0);
      const streams = new StreamDeadlines(timers, h.calls, h.events, 10_000);
      const inbound = await h.calls.register('acme', await agentVersion(h), {
        call_type: 'inbound',
        call_from: '+14155550123',
        call_to: '+14155550100',
        metadata: {},
      });
      streams.await('acme', inbound.record.call_id, 'dial_failed', 'no stream');
      expect(await tryCall(h)).toBe('not_connected');
      timers.advance(10_000);
      expect((await h.calls.get('acme', inbound.record.call_id)).disconnection_reason).toBe('dial_failed');
      expect(await tryCall(h)).toBe('registered');
    });

    it('when its browser never opens the web call, or presents its token only after it expired', async () => {
      const h = await createHarness(':memory:', { maxConcurrentCalls: 1 });
      const timers = new ManualTimers(0);
      const tokens = new WebCallTokens(promised(new SqliteWebCallTokens(h.db)), timers, ({ orgId, callId }) =>
        h.calls.endUnconnected(orgId, callId, 'not_connected', 'dial_no_answer', 'never opened'),
      );
      await tokens.issue('wct_a', 'acme', await registerWeb(h));
      expect(await tryCall(h)).toBe('not_connected');
      timers.advance(WEB_TOKEN_TTL_MS);
      await settle(); // the expiry's end of the call is written asynchronously
      expect(await h.limits.slotsInUse('acme')).toBe(0);

      const late = await registerWeb(h);
      await tokens.issue('wct_b', 'acme', late);
      // A busy event loop: the browser's start message is handled before the expiry timer runs.
      timers.stall(WEB_TOKEN_TTL_MS + 1);
      expect(await tokens.redeem('wct_b')).toBeUndefined();
      expect(await h.calls.get('acme', late)).toMatchObject({
        call_status: 'not_connected',
        disconnection_reason: 'dial_no_answer',
      });
      expect(await tryCall(h)).toBe('registered');
    });
  });
});

describe('organization limits across processes sharing the store', () => {
  it("two processes' calls count against one limit, a dead node's calls do not, and a call admitted once keeps its slot", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'limits-'));
    const store = openStore(dir, { random: (n) => '0'.repeat(n * 2), now: () => 0 });
    try {
      for (const node of ['a', 'b']) await store.nodes.acquire(node, `${node}-1`, 0, 1_000, null);
      const limitsOf = () =>
        new OrgLimits(
          { credits: store.credits, calls: store.calls },
          { maxConcurrentCalls: 2, orgLimits: {}, pricePerMinute: 10, now: () => 0 },
        );
      const [a, b] = [limitsOf(), limitsOf()];
      const register = (callId: string, owner: string) =>
        store.calls.insert(
          'acme',
          registeredRecord({
            call_id: callId,
            agent_id: 'x',
            agent_version: 1,
            call_type: 'web',
            call_from: null,
            call_to: null,
          }),
          0,
          { ownerNode: owner },
        );
      await register('call_a1', 'a');
      await register('call_b1', 'b');
      await register('call_a2', 'a');
      expect(await a.admit('acme', 'call_a1')).toBeNull();
      expect(await b.admit('acme', 'call_b1')).toBeNull();
      expect(await a.admit('acme', 'call_a2')).toBe('concurrency_limit_reached');
      expect(await b.slotsInUse('acme')).toBe(2);
      // Admitted at registration, then again as its stream opens: the slot it holds is its own.
      expect(await a.admit('acme', 'call_a1')).toBeNull();
      // Node b dies and node a takes its lease over: its call holds nothing any more (recovery will finish it), and
      // a's waiting call fits.
      await store.nodes.renew('a', 'a-1', 2_000, 60_000, null);
      await store.nodes.forgetExpired(2_000);
      expect(await a.admit('acme', 'call_a2')).toBeNull();
      // A call ended anywhere frees its slot.
      await store.calls.update('acme', 'call_a1', (r) => ({ ...r, call_status: 'ended' }));
      expect(await a.slotsInUse('acme')).toBe(1);
    } finally {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
