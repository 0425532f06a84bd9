// What an operator scrapes: calls under way, how calls end, each answered turn's latency by stage,
// and the process's own metrics, in Prometheus's text format through prom-client. One registry per
// service, so several services in one process (the tests) never mix their numbers.
import cluster from 'node:cluster';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { CallRegistry } from '../call/registry.ts';
import { clusterWideRender } from './cluster.ts';
import type { CallEventMap, CallEvents, TurnLatency } from '../records/events.ts';
import { CALL_TYPES } from '../records/record.ts';

/** Seconds: around the half-second a phone caller feels as natural, out to the long tail. */
export const TURN_LATENCY_BUCKETS = [0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.75, 1, 1.5, 2, 3, 5, 10];

/** Stages of a turn, as named in the record's `latency` (llm_speakable: first speakable chunk). */
const STAGES: readonly [stage: string, ms: (turn: TurnLatency) => number | null][] = [
  ['e2e', (t) => t.e2e],
  ['asr', (t) => t.asr],
  ['llm', (t) => t.llm],
  ['llm_speakable', (t) => t.llmSpeakable],
  ['tts', (t) => t.tts],
];

export type WebhookOutcome = 'delivered' | 'retry' | 'failed';

export interface ServiceMetrics {
  readonly contentType: string;
  /** A webhook delivery attempt ended so. */
  webhookAttempt(outcome: WebhookOutcome): void;
  /** An agent frame could not be sent: the caller's socket had closed. */
  outboundFrameDropped(): void;
  /** The exposition text, collected now. */
  render(): Promise<string>;
  /** Stops listening to the call events. */
  close(): void;
}

export function createMetrics(deps: {
  events: CallEvents;
  registry: CallRegistry;
  webhookBacklog: () => Promise<number>;
}): ServiceMetrics {
  const register = new Registry();
  collectDefaultMetrics({ register });

  new Gauge({
    name: 'voicecall_active_calls',
    help: 'Calls under way (connected, running a session), by call_type',
    labelNames: ['call_type'] as const,
    registers: [register],
    // Counted from the registry at each scrape: right whatever ended a call, crash recovery included.
    collect() {
      this.reset();
      for (const type of CALL_TYPES) this.set({ call_type: type }, 0);
      for (const call of deps.registry.all()) this.inc({ call_type: call.callType });
    },
  });
  const calls = new Counter({
    name: 'voicecall_calls_total',
    help: 'Calls whose record was finalized, by disconnection_reason',
    labelNames: ['disconnection_reason'] as const,
    registers: [register],
  });
  const turnLatency = new Histogram({
    name: 'voicecall_turn_latency_seconds',
    help: "Each answered turn's latency by stage: e2e (caller's speech end to first agent audio), asr, llm (first token of the turn's first model request), llm_speakable, tts (first audio); tool: each HTTP tool request",
    labelNames: ['stage'] as const,
    buckets: TURN_LATENCY_BUCKETS,
    registers: [register],
  });

  const fallbacks = new Counter({
    name: 'voicecall_provider_fallbacks_total',
    help: "Calls moved from a failed provider to the next one (docs/fallbacks.md), by kind (stt, voice, llm), from and to (stt and voice: the engine; llm: the model's place, primary or fallback_N, as model names are the organizations' own) and reason (connect, timeout, error)",
    labelNames: ['kind', 'from', 'to', 'reason'] as const,
    registers: [register],
  });
  const framesDropped = new Counter({
    name: 'voicecall_outbound_frames_dropped_total',
    help: "Agent audio frames that could not be sent because the caller's socket had closed",
    registers: [register],
  });
  const mcpUnreachable = new Counter({
    name: 'voicecall_mcp_servers_unreachable_total',
    help: 'MCP servers that could not be listed when a call started (the call went on without their tools)',
    registers: [register],
  });
  const webhookAttempts = new Counter({
    name: 'voicecall_webhook_deliveries_total',
    help: 'Webhook delivery attempts by outcome: delivered, retry (failed, will be tried again), failed (given up)',
    labelNames: ['outcome'] as const,
    registers: [register],
  });
  new Gauge({
    name: 'voicecall_webhook_backlog',
    help: 'Webhook deliveries waiting to be sent or retried',
    registers: [register],
    // Every worker reads the same outbox: summing them would count each delivery once per worker.
    aggregator: 'max',
    async collect() {
      this.set(await deps.webhookBacklog());
    },
  });

  const onEnded = ({ record }: CallEventMap['ended'][0]) => {
    calls.inc({ disconnection_reason: record.disconnection_reason ?? 'unknown' });
  };
  const onTurn = ({ parts }: CallEventMap['turn'][0]) => {
    for (const [stage, ms] of STAGES) {
      const value = ms(parts);
      if (value !== null) turnLatency.observe({ stage }, value / 1000);
    }
  };
  const onTool = ({ ms }: CallEventMap['tool'][0]) => turnLatency.observe({ stage: 'tool' }, ms / 1000);
  const onFallback = ({ change }: CallEventMap['fallback'][0]) => {
    const place = (position: number) => (position === 0 ? 'primary' : `fallback_${position}`);
    const llm = change.kind === 'llm';
    fallbacks.inc({
      kind: change.kind,
      from: llm ? place(change.fromPosition) : change.from,
      to: llm ? place(change.toPosition) : change.to,
      reason: change.reason,
    });
  };
  deps.events.on('ended', onEnded);
  deps.events.on('fallback', onFallback);
  deps.events.on('turn', onTurn);
  deps.events.on('tool', onTool);
  const onMcpUnreachable = () => mcpUnreachable.inc();
  deps.events.on('mcp_unreachable', onMcpUnreachable);

  return {
    contentType: register.contentType,
    webhookAttempt: (outcome) => webhookAttempts.inc({ outcome }),
    outboundFrameDropped: () => framesDropped.inc(),
    render: cluster.isWorker ? clusterWideRender(register) : () => register.metrics(),
    close() {
      deps.events.off('ended', onEnded);
      deps.events.off('turn', onTurn);
      deps.events.off('tool', onTool);
      deps.events.off('mcp_unreachable', onMcpUnreachable);
      deps.events.off('fallback', onFallback);
    },
  };
}
