// Per-call latency samples, summarised as decisions.md's `latency` field.
import type { TurnLatency } from '../calls/events.ts';
import { LATENCY_KEYS } from '../calls/record.ts';

export type LatencyKey = (typeof LATENCY_KEYS)[number];

export interface LatencyStats {
  p50: number;
  p90: number;
  p95: number;
  p99: number;
  min: number;
  max: number;
  num: number;
}

/** Nearest-rank percentile of sorted values. */
function percentile(sorted: number[], p: number): number {
  const rank = Math.max(1, Math.ceil((p / 100) * sorted.length));
  return sorted[Math.min(sorted.length, rank) - 1]!;
}

export function summarize(values: number[]): LatencyStats | undefined {
  if (values.length === 0) return undefined;
  const sorted = [...values].sort((a, b) => a - b);
  const round = (v: number) => Math.round(v * 10) / 10;
  return {
    p50: round(percentile(sorted, 50)),
    p90: round(percentile(sorted, 90)),
    p95: round(percentile(sorted, 95)),
    p99: round(percentile(sorted, 99)),
    min: round(sorted[0]!),
    max: round(sorted.at(-1)!),
    num: sorted.length,
  };
}

export class LatencyRecorder {
  private readonly samples = new Map<LatencyKey, number[]>();

  add(key: LatencyKey, ms: number): void {
    if (!Number.isFinite(ms) || ms < 0) return;
    let list = this.samples.get(key);
    if (!list) this.samples.set(key, (list = []));
    list.push(ms);
  }

  values(key: LatencyKey): readonly number[] {
    return this.samples.get(key) ?? [];
  }

  /** null when nothing was measured (a call that never had a turn). */
  summary(): Partial<Record<LatencyKey, LatencyStats>> | null {
    const out: Partial<Record<LatencyKey, LatencyStats>> = {};
    for (const key of LATENCY_KEYS) {
      const stats = summarize(this.samples.get(key) ?? []);
      if (stats) out[key] = stats;
    }
    return Object.keys(out).length ? out : null;
  }
}

/**
 * Gathers one turn's parts as they are measured and hands them on once, when both the first
 * agent audio and the model's timing are known (a streaming model reports its timing only at
 * the end of its answer, often after the first audio went out).
 */
export class TurnLatencyParts {
  private readonly parts: Omit<TurnLatency, 'e2e' | 'at'> & { e2e: number | null; at: number };
  private sent = false;

  constructor(
    turn: number,
    asr: number | null,
    private readonly emit: (parts: TurnLatency) => void,
  ) {
    this.parts = { turn, at: 0, e2e: null, asr, llm: null, llmSpeakable: null, tts: null };
  }

  firstAudio(e2e: number, at: number): void {
    this.parts.e2e = e2e;
    this.parts.at = at;
    this.flush();
  }

  model(llm: number | null, llmSpeakable: number | null): void {
    this.parts.llm = llm;
    this.parts.llmSpeakable = llmSpeakable;
    this.flush();
  }

  /** Only the turn's first synthesis counts. */
  tts(ms: number): void {
    this.parts.tts ??= ms;
  }

  private flush(): void {
    const { e2e } = this.parts;
    if (this.sent || e2e === null || this.parts.llmSpeakable === null) return;
    this.sent = true;
    this.emit({ ...this.parts, e2e });
  }
}
