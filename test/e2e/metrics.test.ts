// GET /metrics on a real service after real calls: Prometheus text that a Prometheus parser reads,
// whose counts match the calls made, open only to the bearer of METRICS_TOKEN.
import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CallRecord } from '../../src/records/record.ts';
import { agentFinished, bookWithDemo, placeInboundCall } from '../helpers/phone.ts';
import { callEnded, startTestService, type TestService } from '../helpers/service.ts';

const TOKEN = 'metrics-token-0123456789abcdef';
const NUMBER = '+15550700001';
let t: TestService;

beforeAll(async () => {
  t = await startTestService({ METRICS_TOKEN: TOKEN });
  const demo = (await t.request('GET', '/v2/agents/demo')).body as Record<string, unknown>;
  const { agent_id: _id, version: _v, is_published: _p, last_modified: _m, ...config } = demo;
  expect(
    (await t.request('POST', '/v2/agents', { body: { ...config, agent_id: 'metered', inbound_numbers: [NUMBER] } }))
      .status,
  ).toBe(201);
}, 60_000);
afterAll(async () => t?.stop());

async function scrape() {
  const res = await fetch(`${t.url}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } });
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  const text = await res.text();
  // The parser throws on any line that is not the text format; it folds a labelled histogram's series
  // into one, so per-stage series are read from their sample lines.
  return { families: parsePrometheusTextFormat(text), text };
}

/** One sample of a labelled series, e.g. series(text, 'voicecall_turn_latency_seconds_count', 'stage', 'e2e'). */
function series(text: string, name: string, label: string, value: string, le?: string): number | undefined {
  for (const line of text.split('\n')) {
    const match = /^(\w+)\{([^}]*)\} (\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const labels = Object.fromEntries([...match[2]!.matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1]!, m[2]!]));
    if (labels[label] === value && (le === undefined || labels.le === le)) return Number(match[3]);
  }
  return undefined;
}

const ended = (callId: string): Promise<CallRecord> => callEnded(t, callId);

describe('GET /metrics', () => {
  it('is refused without the token, with a wrong one, and with an API key', async () => {
    for (const authorization of [undefined, 'Bearer wrong-token-0123456789abcdef', `Bearer ${t.keyOf('acme')}`]) {
      const res = await fetch(`${t.url}/metrics`, { headers: authorization ? { authorization } : {} });
      expect(res.status).toBe(401);
      expect(res.headers.get('www-authenticate')).toBe('Bearer');
    }
  });

  it('counts active calls while one runs, then ended calls by reason and every answered turn by stage, as the records say', async () => {
    const { caller, callId } = await placeInboundCall(t.url, NUMBER);
    await agentFinished(caller, { after: 0, timeoutMs: 20_000 });
    const during = (await scrape()).families;
    const active = during.find((f) => f.name === 'voicecall_active_calls')!;
    expect(active.type).toBe('GAUGE');
    expect(active.metrics.find((m) => m.labels?.call_type === 'inbound')?.value).toBe('1');

    await bookWithDemo(t, caller, callId);
    await caller.hangUp();
    const record = await ended(callId);

    const { families: after, text } = await scrape();
    expect(
      after.find((f) => f.name === 'voicecall_active_calls')!.metrics.find((m) => m.labels?.call_type === 'inbound')
        ?.value,
    ).toBe('0');
    const calls = after.find((f) => f.name === 'voicecall_calls_total')!;
    expect(calls.type).toBe('COUNTER');
    expect(calls.metrics.find((m) => m.labels?.disconnection_reason === 'user_hangup')?.value).toBe('1');

    expect(after.find((f) => f.name === 'voicecall_turn_latency_seconds')?.type).toBe('HISTOGRAM');
    const count = (stage: string) => series(text, 'voicecall_turn_latency_seconds_count', 'stage', stage);
    // One observation per answered turn, as the record counts voice-to-voice; each turn's parts are
    // its first model request and first audio (the record's llm counts every request, tool rounds too).
    expect(count('e2e')).toBe(record.latency!.e2e!.num);
    expect(count('e2e')).toBeGreaterThanOrEqual(2);
    for (const stage of ['llm', 'llm_speakable', 'tts']) expect(count(stage), stage).toBe(count('e2e'));
    const tools = (record.transcript_with_tool_calls ?? []).filter((item) => item.role === 'tool_call_result').length;
    expect(tools).toBeGreaterThanOrEqual(1);
    expect(count('tool')).toBe(tools);
    // Buckets are cumulative and end with +Inf = count.
    const bounds = ['0.05', '0.1', '0.2', '0.3', '0.4', '0.5', '0.75', '1', '1.5', '2', '3', '5', '10', '+Inf'];
    const buckets = bounds.map((le) => series(text, 'voicecall_turn_latency_seconds_bucket', 'stage', 'e2e', le)!);
    for (let i = 1; i < buckets.length; i++) expect(buckets[i]).toBeGreaterThanOrEqual(buckets[i - 1]!);
    expect(buckets.at(-1)).toBe(count('e2e'));
    expect(after.find((f) => f.name === 'voicecall_outbound_frames_dropped_total')?.type).toBe('COUNTER');
    // The process's default metrics come along.
    expect(after.some((f) => f.name === 'process_cpu_seconds_total')).toBe(true);
    expect(after.some((f) => f.name === 'nodejs_eventloop_lag_p99_seconds')).toBe(true);
  }, 90_000);

  it('is not served at all without METRICS_TOKEN or METRICS=public, and with METRICS=public needs no token', async () => {
    expect((await t.request('GET', '/metrics', { key: null })).status).toBe(401);
    const plain = await startTestService();
    const open = await startTestService({ METRICS: 'public' });
    try {
      expect((await fetch(`${plain.url}/metrics`)).status).toBe(404);
      const res = await fetch(`${open.url}/metrics`);
      expect(res.status).toBe(200);
      expect(parsePrometheusTextFormat(await res.text()).some((f) => f.name === 'voicecall_calls_total')).toBe(true);
    } finally {
      await plain.stop();
      await open.stop();
    }
  });
});
