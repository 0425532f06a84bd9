// POST /telephony/twilio/voice with TWILIO_AUTH_TOKEN set: the voice webhook's shared cases
// (test/carriers/webhook-cases.ts: only requests Twilio signed for PUBLIC_URL + path register a call, a CallSid sent
// again gets the first answer); here, a CallSid moved to another number is refused, an agent that opts out of
// storage keeps nothing, and without a token nothing is taken unless the signature check is turned off.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CallRecordSchema, type CallRecord } from '../../../src/records/record.ts';
import { twilioSignature } from '../../../src/carriers/twilio/signature.ts';
import { agentFinished, fixtureUlaw } from '../../helpers/phone.ts';
import { freePort } from '../../helpers/net.ts';
import { startTestService, type TestService } from '../../helpers/service.ts';
import { TwilioStreamCaller } from '../../../src/carriers/sim/twilio-stream.ts';
import { webhookCases } from '../webhook-cases.ts';

const TOKEN = 'twilio-auth-token-for-tests';
const NUMBER = '+15550400001';
let t: TestService;
let publicUrl: string;

beforeAll(async () => {
  const port = await freePort();
  publicUrl = `http://127.0.0.1:${port}`;
  t = await startTestService({ PORT: String(port), PUBLIC_URL: publicUrl, TWILIO_AUTH_TOKEN: TOKEN });
  const res = await t.request('POST', '/v2/agents', {
    body: {
      agent_id: 'private-line',
      agent_name: 'Private line',
      begin_message: 'Hi.',
      opt_out_sensitive_data_storage: true,
      inbound_numbers: [NUMBER],
      llm: { base_url: `${publicUrl}/demo/llm/v1`, model: 'demo' },
    },
  });
  expect(res.status).toBe(201);
}, 60_000);
afterAll(async () => t?.stop());

function voiceWebhook(params: Record<string, string>, signature: string | undefined) {
  return fetch(`${t.url}/telephony/twilio/voice`, {
    method: 'POST',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      ...(signature ? { 'x-twilio-signature': signature } : {}),
    },
    body: new URLSearchParams(params).toString(),
  });
}

// Numbers need no carrier account here: the service's own TWILIO_AUTH_TOKEN signs every number.
webhookCases({
  name: 'Twilio',
  mediaPath: '/media/twilio',
  service: () => t,
  number: NUMBER,
  agentId: 'private-line',
  body: (to) => ({
    CallSid: `CA${randomBytes(16).toString('hex')}`,
    AccountSid: 'AC123',
    From: '+14155550100',
    To: to,
  }),
  changed: (body) => ({ ...body, To: '+15550400002' }),
  send: (body, headers) => voiceWebhook(body, headers['x-twilio-signature']),
  sign: async (body, key) => ({
    'x-twilio-signature': twilioSignature(
      key === 'account' ? TOKEN : 'wrong-token',
      `${publicUrl}/telephony/twilio/voice`,
      body,
    ),
  }),
  streamOf: (twiml) => {
    const url = /<Stream url="([^"]+)"/.exec(twiml)?.[1];
    expect(url).toMatch(/^ws:\/\//);
    const custom = Object.fromEntries(
      [...twiml.matchAll(/<Parameter name="([^"]+)" value="([^"]+)"\/>/g)].map((m) => [m[1]!, m[2]!]),
    );
    expect(Object.keys(custom).sort()).toEqual(['call_id', 'secret']);
    return { path: new URL(url!).pathname, callId: custom.call_id!, secret: custom.secret! };
  },
  recordOf: (body) => ({ metadata: { twilio_call_sid: body.CallSid } }),
});

describe('Twilio voice webhook with a configured auth token', () => {
  const params = { CallSid: 'CA123', AccountSid: 'AC123', From: '+14155550100', To: NUMBER };

  it('accepts a request signed for PUBLIC_URL + path, and a call that opts out of storage keeps no transcript or recording', async () => {
    const res = await voiceWebhook(params, twilioSignature(TOKEN, `${publicUrl}/telephony/twilio/voice`, params));
    expect(res.status).toBe(200);
    const twiml = await res.text();
    const url = /<Stream url="([^"]+)"/.exec(twiml)![1]!;
    const custom = Object.fromEntries(
      [...twiml.matchAll(/<Parameter name="([^"]+)" value="([^"]+)"\/>/g)].map((m) => [m[1]!, m[2]!]),
    );
    const caller = new TwilioStreamCaller({ url, customParameters: custom });
    await caller.connect();
    // The whole greeting first: a gap of a busy machine's inside it is not its end (words said over the agent
    // are barge-in, a different rule), so the default quiet of 800 ms, not 300.
    await agentFinished(caller, { after: 0, timeoutMs: 20_000 });
    await caller.speak(fixtureUlaw('04-yes-please'));
    await agentFinished(caller, { timeoutMs: 20_000 });
    await caller.hangUp();
    let record: CallRecord | undefined;
    for (let i = 0; i < 100 && record?.call_status !== 'ended'; i++) {
      record = CallRecordSchema.parse((await t.request('GET', `/v2/calls/${custom.call_id}`)).body);
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(record).toMatchObject({
      call_status: 'ended',
      opt_out_sensitive_data_storage: true,
      transcript: null,
      transcript_with_tool_calls: null,
      recording_url: null,
    });
    expect(record!.duration_ms).toBeGreaterThan(0);
    expect((await t.request('GET', `/v2/calls/${custom.call_id}/recording`)).status).toBe(404);
  }, 60_000);
});

describe('Twilio voice webhook sent again for one CallSid', () => {
  const params = { CallSid: 'CA-replayed', AccountSid: 'AC123', From: '+14155550100', To: NUMBER };
  const signed = () => voiceWebhook(params, twilioSignature(TOKEN, `${publicUrl}/telephony/twilio/voice`, params));
  const total = async () =>
    ((await t.request('POST', '/v2/calls/list', { body: {} })).body as { total_count: number }).total_count;

  it('refuses the same CallSid for another number and registers nothing', async () => {
    await signed();
    const before = await total();
    const moved = { ...params, To: '+15550400009' };
    await t.request('POST', '/v2/agents', {
      body: {
        agent_id: 'other-line',
        agent_name: 'Other',
        inbound_numbers: [moved.To],
        llm: { base_url: `${publicUrl}/demo/llm/v1`, model: 'demo' },
      },
    });
    const res = await voiceWebhook(moved, twilioSignature(TOKEN, `${publicUrl}/telephony/twilio/voice`, moved));
    expect(res.status).toBe(409);
    expect(await res.text()).toContain('<Hangup/>');
    expect(await total()).toBe(before);
  });
});

describe('Twilio webhooks without an auth token', () => {
  const params = { CallSid: 'CA456', AccountSid: 'AC123', From: '+14155550100', To: NUMBER };
  const post = (base: string, path: string) =>
    fetch(`${base}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(params).toString(),
    });

  it('refuses the voice and status webhooks with 403 by default: nothing unsigned can start or end a call', async () => {
    const open = await startTestService({ TWILIO_AUTH_TOKEN: '' });
    try {
      await open.request('POST', '/v2/agents', {
        body: {
          agent_id: 'line',
          agent_name: 'Line',
          begin_message: 'Hi.',
          inbound_numbers: [NUMBER],
          llm: { base_url: 'https://models.example.com/v1', model: 'm' },
        },
      });
      const voice = await post(open.url, '/telephony/twilio/voice');
      expect(voice.status).toBe(403);
      expect(((await voice.json()) as { code: string }).code).toBe('FORBIDDEN');
      expect((await post(open.url, '/telephony/twilio/status?call_id=call_x')).status).toBe(403);
      expect(
        ((await open.request('POST', '/v2/calls/list', { body: {} })).body as { total_count: number }).total_count,
      ).toBe(0);
    } finally {
      await open.stop();
    }
  });

  it('accepts them unchecked only with TWILIO_SIGNATURE=off, and says so in the log at start', async () => {
    const off = await startTestService({ TWILIO_AUTH_TOKEN: '', TWILIO_SIGNATURE: 'off' });
    try {
      await off.request('POST', '/v2/agents', {
        body: {
          agent_id: 'line',
          agent_name: 'Line',
          begin_message: 'Hi.',
          inbound_numbers: [NUMBER],
          llm: { base_url: 'https://models.example.com/v1', model: 'm' },
        },
      });
      const voice = await post(off.url, '/telephony/twilio/voice');
      expect(voice.status).toBe(200);
      expect(await voice.text()).toContain('<Stream url=');
      expect(off.logs.some((line) => line.includes('TWILIO_SIGNATURE=off') && line.includes('"level":40'))).toBe(true);
    } finally {
      await off.stop();
    }
  });
});
