// OpenTelemetry traces (OTEL_EXPORTER_OTLP_ENDPOINT set): one trace per call, its root span from
// connect to the final record, a span per answered turn (the caller's speech end to the agent's
// first audio) with child spans for the stages the service measured (STT final, model first
// token, first speakable chunk, TTS first audio) and one per HTTP tool request. Spans are built
// from the measured times, exported over OTLP/HTTP by the official SDK.
import { context, trace, type Span, type Tracer } from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { CallEventMap, CallEvents } from '../records/events.ts';

export interface CallTracing {
  /** Exports what is left and stops listening. */
  close(): Promise<void>;
}

export function startCallTracing(deps: {
  events: CallEvents;
  endpoint: string;
  serviceName?: string;
  exportDelayMs?: number;
}): CallTracing {
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ 'service.name': deps.serviceName ?? 'voicecall-runtime' }),
    spanProcessors: [
      new BatchSpanProcessor(new OTLPTraceExporter({ url: `${deps.endpoint.replace(/\/+$/, '')}/v1/traces` }), {
        scheduledDelayMillis: deps.exportDelayMs ?? 2_000,
      }),
    ],
  });
  const tracer: Tracer = provider.getTracer('voicecall-runtime');
  const calls = new Map<string, Span>();

  const child = (
    parent: Span,
    name: string,
    startMs: number,
    endMs: number,
    attributes: Record<string, string | number> = {},
  ): Span => {
    const span = tracer.startSpan(name, { startTime: startMs, attributes }, trace.setSpan(context.active(), parent));
    span.end(Math.max(startMs, endMs));
    return span;
  };

  const onStarted = ({ orgId, record }: CallEventMap['started'][0]) => {
    calls.set(
      record.call_id,
      tracer.startSpan('call', {
        startTime: record.start_timestamp ?? Date.now(),
        attributes: {
          'call.id': record.call_id,
          'call.type': record.call_type,
          'org.id': orgId,
          'agent.id': record.agent_id,
          'agent.version': record.agent_version ?? 0,
        },
      }),
    );
  };
  const onTurn = ({ callId, parts }: CallEventMap['turn'][0]) => {
    const root = calls.get(callId);
    if (!root) return;
    // The turn runs from the caller's speech end to the first agent audio.
    const start = parts.at - parts.e2e;
    const turn = tracer.startSpan(
      'turn',
      { startTime: start, attributes: { 'turn.number': parts.turn, 'turn.e2e_ms': Math.round(parts.e2e) } },
      trace.setSpan(context.active(), root),
    );
    let at = start;
    if (parts.asr !== null) {
      child(turn, 'stt.final', at, at + parts.asr);
      at += parts.asr;
    }
    if (parts.llm !== null) child(turn, 'llm.first_token', at, at + parts.llm);
    if (parts.llmSpeakable !== null) child(turn, 'llm.first_speakable', at, at + parts.llmSpeakable);
    if (parts.tts !== null) child(turn, 'tts.first_audio', parts.at - parts.tts, parts.at);
    turn.end(parts.at);
  };
  const onTool = ({ callId, name, ms, ok }: CallEventMap['tool'][0]) => {
    const root = calls.get(callId);
    if (!root) return;
    const end = Date.now();
    child(root, 'tool', end - ms, end, { 'tool.name': name, 'tool.ok': ok ? 1 : 0 });
  };
  const onEnded = ({ record }: CallEventMap['ended'][0]) => {
    const root = calls.get(record.call_id);
    if (!root) return;
    calls.delete(record.call_id);
    root.setAttribute('call.disconnection_reason', record.disconnection_reason ?? 'unknown');
    root.end(record.end_timestamp ?? Date.now());
  };
  deps.events.on('started', onStarted);
  deps.events.on('turn', onTurn);
  deps.events.on('tool', onTool);
  deps.events.on('ended', onEnded);

  return {
    async close() {
      deps.events.off('started', onStarted);
      deps.events.off('turn', onTurn);
      deps.events.off('tool', onTool);
      deps.events.off('ended', onEnded);
      await provider.shutdown();
    },
  };
}
