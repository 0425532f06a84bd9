// OpenTelemetry end to end: a real phone call through the embedded engines and the demo model with
// its booking tool, its spans exported by the SDK over OTLP/HTTP to a receiver in this test.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { CallRecordSchema, type CallRecord } from '../../src/records/record.ts';
import { agentFinished, bookWithDemo, placeInboundCall } from '../helpers/phone.ts';
import { startTestService } from '../helpers/service.ts';

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  startTimeUnixNano: string;
  endTimeUnixNano: string;
  attributes?: { key: string; value: { stringValue?: string; intValue?: string | number } }[];
}

const NUMBER = '+15550950001';

describe('OpenTelemetry traces', () => {
  it('one trace per call: a call span, a span per answered turn with its measured stages, and the tool request', async () => {
    const spans: OtlpSpan[] = [];
    const collector = createServer((req, res) => {
      let body = '';
      req.on('data', (d: Buffer) => (body += d.toString()));
      req.on('end', () => {
        const payload = JSON.parse(body) as { resourceSpans: { scopeSpans: { spans: OtlpSpan[] }[] }[] };
        for (const resource of payload.resourceSpans)
          for (const scope of resource.scopeSpans) spans.push(...scope.spans);
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
    });
    await new Promise<void>((resolve) => collector.listen(0, '127.0.0.1', resolve));
    const t = await startTestService({
      OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${(collector.address() as AddressInfo).port}`,
    });
    let record: CallRecord;
    try {
      const demo = (await t.request('GET', '/v2/agents/demo')).body as Record<string, unknown>;
      const { agent_id: _id, version: _v, is_published: _p, last_modified: _m, ...config } = demo;
      expect(
        (await t.request('POST', '/v2/agents', { body: { ...config, agent_id: 'traced', inbound_numbers: [NUMBER] } }))
          .status,
      ).toBe(201);
      const { caller, callId } = await placeInboundCall(t.url, NUMBER);
      await agentFinished(caller, { after: 0, timeoutMs: 20_000 });
      await bookWithDemo(t, caller, callId);
      await caller.hangUp();
      for (let i = 0; i < 100; i++) {
        record = CallRecordSchema.parse((await t.request('GET', `/v2/calls/${callId}`)).body);
        if (record.call_status === 'ended') break;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    } finally {
      // Stopping the service flushes what the batch processor still holds.
      await t.stop();
      collector.close();
    }
    const attr = (span: OtlpSpan, key: string) => span.attributes?.find((a) => a.key === key)?.value;
    const root = spans.find((s) => s.name === 'call' && attr(s, 'call.id')?.stringValue === record!.call_id)!;
    expect(root).toBeDefined();
    expect(root.parentSpanId ?? '').toBe('');
    expect(attr(root, 'call.disconnection_reason')?.stringValue).toBe('user_hangup');
    const ofCall = spans.filter((s) => s.traceId === root.traceId);
    const turns = ofCall.filter((s) => s.name === 'turn');
    expect(turns).toHaveLength(record!.latency!.e2e!.num);
    for (const turn of turns) {
      expect(turn.parentSpanId).toBe(root.spanId);
      const stages = ofCall.filter((s) => s.parentSpanId === turn.spanId).map((s) => s.name);
      expect(stages).toEqual(expect.arrayContaining(['llm.first_token', 'llm.first_speakable', 'tts.first_audio']));
      // The turn lasts its voice-to-voice time.
      const ms = Number(BigInt(turn.endTimeUnixNano) - BigInt(turn.startTimeUnixNano)) / 1e6;
      expect(Math.abs(ms - Number(attr(turn, 'turn.e2e_ms')?.intValue))).toBeLessThanOrEqual(1);
    }
    const tools = ofCall.filter((s) => s.name === 'tool');
    expect(tools.length).toBeGreaterThanOrEqual(1);
    expect(tools.every((s) => s.parentSpanId === root.spanId)).toBe(true);
  }, 90_000);
});
