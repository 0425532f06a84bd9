// The organization's concurrent-call limit counts every call of this process from its
// registration (ringing, or waiting for its media stream) until it ends, and every way a call
// can end without connecting gives its slot back.
import { describe, expect, it, vi } from 'vitest';
import type { ActiveCall } from '../../src/call/registry.ts';
import { ADMISSION_MESSAGES, type OutboundCallRequest } from '../../src/calls/service.ts';
import { StreamDeadlines } from '../../src/calls/stream-deadlines.ts';
import { CallOutcomes } from '../../src/carriers/outcomes.ts';
import { ManualTimers } from '../../src/timers.ts';
import { WEB_TOKEN_TTL_MS, WebCallTokens } from '../../src/transports/web/tokens.ts';
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
function registerWeb(h: Harness): string {
  const { record } = h.calls.register('acme', agentVersion(h), { call_type: 'web', call_from: null, call_to: null, metadata: {}, dynamic_variables: {} });
  return record.call_id;
}

const agentVersion = (h: Harness) => h.agents.resolve('acme', 'bot', 'production');

/** What CallManager does once a stream opened and the call was admitted: a session runs it. */
function connect(h: Harness, callId: string): { end(): void } {
  let finish!: () => void;
  const finished = new Promise<void>((resolve) => (finish = resolve));
  const active: ActiveCall = { callId, orgId: 'acme', callType: 'outbound', requestEnd: () => undefined, voicemailDetected: () => undefined, transferAnswered: () => undefined, transferFailed: () => null, returnStream: () => false, consultFailed: () => undefined, carrierEnded: () => undefined, say: () => undefined, addContext: () => undefined, listen: () => () => undefined, finished };
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
    const h = createHarness(':memory:', { maxConcurrentCalls: 2 });
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
    expect(h.calls.get('acme', third.call_id).call_status).toBe('not_connected');
  });

  it('a web call waiting for its browser counts too', async () => {
    const h = createHarness(':memory:', { maxConcurrentCalls: 1 });
    registerWeb(h);
    expect(await tryCall(h)).toBe('not_connected');
  });

  it('a ringing call is admitted on its own slot when it connects, while a newcomer is refused', async () => {
    const h = createHarness(':memory:', { maxConcurrentCalls: 1 });
    const ringing = await h.calls.createOutbound('acme', outbound());
    // CallManager.connect asks again as the stream opens: the call holds its slot already.
    expect(h.limits.admit('acme', ringing.call_id)).toBeNull();
    connect(h, ringing.call_id);
    expect(h.registry.countFor('acme')).toBe(1);
    const web = registerWeb(h);
    expect(h.limits.admit('acme', web)).toBe('concurrency_limit_reached');
  });

  it("a web call registered while the organization is full waits for its stream: admitted then if a slot freed, else refused", async () => {
    const h = createHarness(':memory:', { maxConcurrentCalls: 1 });
    const running = connect(h, (await h.calls.createOutbound('acme', outbound())).call_id);
    const web = registerWeb(h);
    expect(h.registry.countFor('acme')).toBe(1);
    expect(h.limits.admit('acme', web)).toBe('concurrency_limit_reached');
    running.end();
    await settle();
    const later = registerWeb(h);
    expect(h.registry.countFor('acme')).toBe(1); // the later web call took the freed slot
    expect(h.limits.admit('acme', later)).toBeNull();
  });

  describe('a call that never connects frees its slot', () => {
    const endings: [string, (h: Harness, callId: string) => void][] = [
      ['the carrier reports no answer', (h, id) => new CallOutcomes(h.calls, h.registry).noAnswer(id)],
      ['the carrier reports a failure', (h, id) => new CallOutcomes(h.calls, h.registry).failed(id, 'busy')],
      ['an answering machine took it', (h, id) => new CallOutcomes(h.calls, h.registry).machineAnswered(id)],
      ['the carrier completed it without a stream', (h, id) => new CallOutcomes(h.calls, h.registry).completed(id)],
      ['its campaign scheduler died', (h, id) => h.calls.endAbandoned(id, 'abandoned')],
      // Ended where this process saw no event (another process, say): the store is the truth.
      ['its record ended out of sight', (h, id) => h.callRepo.update('acme', id, (r) => ({ ...r, call_status: 'not_connected', disconnection_reason: 'dial_no_answer' }))],
    ];

    it.each(endings)('when %s', async (_, end) => {
      const h = createHarness(':memory:', { maxConcurrentCalls: 1 });
      const ringing = await h.calls.createOutbound('acme', outbound());
      expect(await tryCall(h)).toBe('not_connected');
      end(h, ringing.call_id);
      expect(await tryCall(h)).toBe('registered');
    });

    it('when the carrier refuses the dial or the dialer fails', async () => {
      const h = createHarness(':memory:', { maxConcurrentCalls: 1 });
      h.dialer.refuse.add('+14155550999');
      expect((await h.calls.createOutbound('acme', outbound('+14155550999'))).disconnection_reason).toBe('dial_failed');
      vi.spyOn(h.dialer, 'dial').mockRejectedValueOnce(new Error('carrier down'));
      expect((await h.calls.createOutbound('acme', outbound())).disconnection_reason).toBe('error_service');
      expect(h.registry.countFor('acme')).toBe(0);
      expect(await tryCall(h)).toBe('registered');
    });

    it('when its media stream never opens', async () => {
      const h = createHarness(':memory:', { maxConcurrentCalls: 1 });
      const timers = new ManualTimers(0);
      const streams = new StreamDeadlines(timers, h.calls, h.events, 10_000);
      const inbound = h.calls.register('acme', agentVersion(h), { call_type: 'inbound', call_from: '+14155550123', call_to: '+14155550100', metadata: {} });
      streams.await('acme', inbound.record.call_id, 'dial_failed', 'no stream');
      expect(await tryCall(h)).toBe('not_connected');
      timers.advance(10_000);
      expect(h.calls.get('acme', inbound.record.call_id).disconnection_reason).toBe('dial_failed');
      expect(await tryCall(h)).toBe('registered');
    });

    it('when its browser never opens the web call, or presents its token only after it expired', async () => {
      const h = createHarness(':memory:', { maxConcurrentCalls: 1 });
      const timers = new ManualTimers(0);
      const tokens = new WebCallTokens(timers, ({ orgId, callId }) => h.calls.endUnconnected(orgId, callId, 'not_connected', 'dial_no_answer', 'never opened'));
      tokens.issue('wct_a', 'acme', registerWeb(h));
      expect(await tryCall(h)).toBe('not_connected');
      timers.advance(WEB_TOKEN_TTL_MS);
      expect(h.registry.countFor('acme')).toBe(0);

      const late = registerWeb(h);
      tokens.issue('wct_b', 'acme', late);
      // A busy event loop: the browser's start message is handled before the expiry timer runs.
      timers.stall(WEB_TOKEN_TTL_MS + 1);
      expect(tokens.redeem('wct_b')).toBeUndefined();
      expect(h.calls.get('acme', late)).toMatchObject({ call_status: 'not_connected', disconnection_reason: 'dial_no_answer' });
      expect(await tryCall(h)).toBe('registered');
    });
  });
});
