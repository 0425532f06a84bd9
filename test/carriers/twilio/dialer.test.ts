import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { ActiveCall } from '../../../src/call/registry.ts';
import { CallRecordSchema, type CallRecord } from '../../../src/records/record.ts';
import { streamSecretMatches } from '../../../src/records/stream-secret.ts';
import { CampaignResponse } from '../../../src/http/campaign-schemas.ts';
import { CreateCallAck } from '../../../src/http/schemas.ts';
import { SqliteCallRepository } from '../../../src/store/calls.ts';
import { SqliteCarrierCallRepository } from '../../../src/store/carrier-calls.ts';
import { twilioSignature } from '../../../src/carriers/twilio/signature.ts';
import { agentFinished } from '../../helpers/phone.ts';
import { startTestService, type TestService } from '../../helpers/service.ts';
import { TwilioStandIn } from '../../helpers/twilio-standin.ts';

let twilio: TwilioStandIn;
let t: TestService;
beforeAll(async () => {
  twilio = await new TwilioStandIn().start();
  t = await startTestService({
    TWILIO_ACCOUNT_SID: twilio.accountSid,
    TWILIO_AUTH_TOKEN: twilio.authToken,
    TWILIO_API_BASE: twilio.url,
    RING_TIMEOUT_MS: '7000',
    SCHEDULER_POLL_MS: '50',
  });
  // The organization's own numbers: a real carrier shows them to the callee.
  const agent = {
    agent_id: 'vm',
    agent_name: 'VM',
    voicemail_detection: true,
    llm: { base_url: 'http://127.0.0.1:9/v1', model: 'm' },
    inbound_numbers: ['+14155550100', '+14155550199'],
  };
  expect((await t.request('POST', '/v2/agents', { body: agent })).status).toBe(201);
});
afterAll(async () => {
  await t.stop();
  await twilio.close();
});

let n = 0;
/** A fresh callee number with the given behavior at the stand-in. */
function callee(kind: Parameters<TwilioStandIn['behaviors']['set']>[1]['kind']): string {
  const to = `+1415666${String(n++).padStart(4, '0')}`;
  twilio.behaviors.set(to, { kind } as Parameters<TwilioStandIn['behaviors']['set']>[1]);
  return to;
}

async function place(to: string, extra: Record<string, unknown> = {}): Promise<string> {
  const res = await t.request('POST', '/v2/calls', {
    body: { call_from: '+14155550100', call_to: to, agent_id: 'demo', ...extra },
  });
  expect(res.status, res.text).toBe(201);
  return CreateCallAck.parse(res.body).call_id;
}

const record = async (id: string) => CallRecordSchema.parse((await t.request('GET', `/v2/calls/${id}`)).body);
const settled = (id: string, status: CallRecord['call_status']) =>
  vi.waitFor(
    async () => {
      const r = await record(id);
      expect(r.call_status).toBe(status);
      return r;
    },
    { timeout: 5_000, interval: 20 },
  );

describe('Twilio dialer', () => {
  it('refuses with 400, naming the field, a call_from or presentation_number the organization does not hold, and dials nothing', async () => {
    const before = twilio.calls.length;
    const to = callee('no-answer');
    const foreign = await t.request('POST', '/v2/calls', {
      body: { call_from: '+14155550777', call_to: to, agent_id: 'demo' },
    });
    expect(foreign.status).toBe(400);
    expect(foreign.text).toContain('body.call_from');
    const shown = await t.request('POST', '/v2/calls', {
      body: { call_from: '+14155550100', presentation_number: '+14155550778', call_to: to, agent_id: 'demo' },
    });
    expect(shown.status).toBe(400);
    expect(shown.text).toContain('body.presentation_number');
    const elsewhere = await t.request('POST', '/v2/calls', {
      key: t.keyOf('globex'),
      body: { call_from: '+14155550100', call_to: to, agent_id: 'demo' },
    });
    expect(elsewhere.status).toBe(400);
    const campaign = await t.request('POST', '/v2/campaigns', {
      body: { name: 'Not ours', call_from: '+14155550777', agent_id: 'demo', tasks: [{ call_to: to }] },
    });
    expect(campaign.status).toBe(400);
    expect(campaign.text).toContain('body.call_from');
    expect(twilio.calls.length).toBe(before);
  });

  it('creates the call at Calls.json with the stream TwiML (call_id and secret as Parameters, no query string), Timeout and every status event', async () => {
    const callId = await place(callee('no-answer'), { presentation_number: '+14155550199' });
    const created = twilio.calls.at(-1)!;
    const form = created.form;
    expect(form.To).toBe(twilio.calls.at(-1)!.form.To);
    expect(form.From).toBe('+14155550199');
    expect(form.Timeout).toBe('7');
    expect(form.StatusCallback).toBe(`${t.url}/telephony/twilio/status?call_id=${callId}`);
    expect(form.StatusCallbackEvent).toEqual(['initiated', 'ringing', 'answered', 'completed']);
    expect(form.MachineDetection).toBeUndefined();
    const twiml = String(form.Twiml);
    const streamUrl = /<Stream url="([^"]+)">/.exec(twiml)![1]!;
    expect(streamUrl).toBe(`${t.url.replace('http://', 'ws://')}/media/twilio`);
    expect(streamUrl).not.toContain('?');
    expect(twiml).toContain(`<Parameter name="call_id" value="${callId}"/>`);
    const secret = /<Parameter name="secret" value="([^"]+)"\/>/.exec(twiml)![1]!;
    expect(
      streamSecretMatches(secret, new SqliteCallRepository(t.service.db!).getForStream(callId)!.streamSecretHash),
    ).toBe(true);
    // The carrier's sid stays reachable by call_id, for hanging up.
    expect(new SqliteCarrierCallRepository(t.service.db!).carrierCallId(callId)).toBe(created.sid);
    await created.done;
  });

  it('asks for machine detection when the agent wants voicemail detection', async () => {
    await place(callee('no-answer'), { agent_id: 'vm' });
    expect(twilio.calls.at(-1)!.form.MachineDetection).toBe('Enable');
  });

  it('ends a call nobody answered as not_connected / dial_no_answer', async () => {
    const id = await place(callee('no-answer'));
    expect(await settled(id, 'not_connected')).toMatchObject({
      disconnection_reason: 'dial_no_answer',
      duration_ms: 0,
    });
  });

  it.each(['busy', 'failed', 'canceled'] as const)('ends a %s call as not_connected / dial_failed', async (kind) => {
    const id = await place(callee(kind));
    const r = await settled(id, 'not_connected');
    expect(r.disconnection_reason).toBe('dial_failed');
    expect(r.disconnection_message).toContain(kind);
  });

  it("ends a call Twilio refuses at once with dial_failed and Twilio's reason", async () => {
    const id = await place(callee('refuse'));
    const r = await record(id);
    expect(r).toMatchObject({ call_status: 'not_connected', disconnection_reason: 'dial_failed' });
    expect(r.disconnection_message).toMatch(/21211/);
  });

  it('ends a call as error_service when Twilio itself fails', async () => {
    const id = await place(callee('server-error'));
    expect(await record(id)).toMatchObject({ call_status: 'error', disconnection_reason: 'error_service' });
  });

  it('ends a call an answering machine took, with no live session, as not_connected / voicemail_reached', async () => {
    const id = await place(callee('machine'), { agent_id: 'vm' });
    expect(await settled(id, 'not_connected')).toMatchObject({ disconnection_reason: 'voicemail_reached' });
  });

  it('hands a machine answer for a live call to its session', async () => {
    const to = callee('machine');
    let detected = 0;
    const spy = vi.spyOn(t.service.registry, 'get').mockImplementation(
      (callId) =>
        ({
          callId,
          orgId: 'acme',
          callType: 'outbound',
          requestEnd: () => undefined,
          voicemailDetected: () => void detected++,
          transferAnswered: () => undefined,
          transferFailed: () => null,
          returnStream: () => false,
          consultFailed: () => undefined,
          carrierEnded: () => undefined,
          say: () => undefined,
          addContext: () => undefined,
          listen: () => () => undefined,
          finished: new Promise(() => undefined),
        }) as ActiveCall,
    );
    try {
      const id = await place(to, { agent_id: 'vm' });
      await twilio.calls.at(-1)!.done;
      expect(detected).toBe(1);
      expect((await record(id)).call_status).toBe('registered');
    } finally {
      spy.mockRestore();
    }
  });

  it("changes nothing when 'completed' arrives for a call that already ended", async () => {
    const to = callee('no-answer');
    twilio.ringMs = 1_000;
    const id = await place(to);
    twilio.ringMs = 30;
    const ended = new SqliteCallRepository(t.service.db!).update('acme', id, (r) => ({
      ...r,
      call_status: 'ended',
      start_timestamp: 1,
      end_timestamp: 2,
      duration_ms: 1,
      disconnection_reason: 'agent_hangup',
    }))!;
    const status = await twilio.callback(twilio.calls.at(-1)!, 'completed');
    expect(status).toBe(204);
    expect(await record(id)).toEqual(ended);
    await twilio.calls.at(-1)!.done;
    expect(await record(id)).toEqual(ended);
  });

  it('refuses a status callback with a bad signature with 403 and changes nothing', async () => {
    const to = callee('no-answer');
    twilio.ringMs = 500;
    const id = await place(to);
    twilio.ringMs = 30;
    const url = `${t.url}/telephony/twilio/status?call_id=${id}`;
    const params = { CallSid: twilio.calls.at(-1)!.sid, CallStatus: 'failed' };
    const forged = await fetch(url, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        'x-twilio-signature': twilioSignature('wrong-token', url, params),
      },
      body: new URLSearchParams(params).toString(),
    });
    expect(forged.status).toBe(403);
    expect((await record(id)).call_status).toBe('registered');
    expect(await settled(id, 'not_connected')).toMatchObject({ disconnection_reason: 'dial_no_answer' });
  });

  it('hangs up the carrier call by call_id (Status=completed); a call Twilio no longer knows counts as ended', async () => {
    const to = callee('no-answer');
    twilio.ringMs = 300;
    const id = await place(to);
    twilio.ringMs = 30;
    const sid = twilio.calls.at(-1)!.sid;
    await t.service.dialer.hangUpCall!(id);
    expect(twilio.hangups).toContain(sid);
    await twilio.calls.at(-1)!.done;
    // Twilio no longer knows the call (404): asking again counts as ended. Asked through the service's dialer, as the
    // service asks: Telnyx's sits in front and passes a call of no Telnyx account on to Twilio's.
    await expect(t.service.dialer.hangUpCall!(id)).resolves.toBeUndefined();
    expect(twilio.hangups.filter((hungUp) => hungUp === sid)).toHaveLength(2);
  });

  it('connects an answered call: Twilio opens the media stream from the TwiML, the greeting plays, the callee hangs up; the late completed changes nothing', async () => {
    const to = `+1415777${String(n++).padStart(4, '0')}`;
    let greeted = 0;
    twilio.behaviors.set(to, {
      kind: 'answer',
      talk: async (caller) => {
        await agentFinished(caller, { after: 0, timeoutMs: 25_000 }); // the greeting
        greeted = caller.played.length;
      },
    });
    const id = await place(to);
    const call = twilio.calls.at(-1)!;
    await call.done;
    expect(greeted).toBeGreaterThan(10);
    expect(call.callbacks.map((c) => `${c.status}:${c.answeredBy ?? ''}:${c.httpStatus}`)).toEqual([
      'initiated::204',
      'ringing::204',
      'in-progress::204',
      'completed::204',
    ]);
    const r = await settled(id, 'ended');
    expect(r).toMatchObject({ call_type: 'outbound', disconnection_reason: 'user_hangup', call_to: to });
    expect(r.start_timestamp).not.toBeNull();
    expect(r.transcript![0]).toMatchObject({ role: 'agent' });
  }, 30_000);

  it('hangs up the carrier leg when the service ends an outbound call (agent_hangup), not when the callee did', async () => {
    const repo = new SqliteCallRepository(t.service.db!);
    const end = async (reason: 'agent_hangup' | 'user_hangup') => {
      twilio.ringMs = 400;
      const id = await place(callee('no-answer'));
      twilio.ringMs = 30;
      const record = repo.update('acme', id, (r) => ({
        ...r,
        call_status: 'ended',
        start_timestamp: 1,
        end_timestamp: 2,
        duration_ms: 1,
        disconnection_reason: reason,
      }))!;
      t.service.events.emit('ended', { orgId: 'acme', record });
      const sid = twilio.calls.at(-1)!.sid;
      await twilio.calls.at(-1)!.done;
      return twilio.hangups.includes(sid);
    };
    expect(await end('agent_hangup')).toBe(true);
    expect(await end('user_hangup')).toBe(false);
  });

  it('runs a campaign through Twilio: refused, busy and unanswered calls all count as failed', async () => {
    const tasks = [callee('no-answer'), callee('busy'), callee('refuse'), callee('failed'), callee('no-answer')].map(
      (call_to) => ({ call_to }),
    );
    const res = await t.request('POST', '/v2/campaigns', {
      body: { name: 'Twilio', call_from: '+14155550100', agent_id: 'demo', tasks, concurrency: 2 },
    });
    const c = CampaignResponse.parse(res.body);
    let peak = 0;
    const done = await vi.waitFor(
      async () => {
        const now = CampaignResponse.parse((await t.request('GET', `/v2/campaigns/${c.id}`)).body);
        peak = Math.max(peak, now.active_concurrency);
        expect(now.status).toBe('fail');
        return now;
      },
      { timeout: 10_000, interval: 10 },
    );
    expect(done).toMatchObject({ failed_calls: 5, completed_calls: 0, active_concurrency: 0 });
    expect(peak).toBeLessThanOrEqual(2);
  });
});
