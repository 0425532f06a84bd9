// Per-call latency samples, summarised as the record's `latency` field (docs/contract.md).
import type { TurnLatency } from '../records/events.ts';
import { LATENCY_KEYS } from '../records/record.ts';

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

/**
 * One call's latency: each stage's samples for the record, and each answered turn's parts for
 * observers. Voice-to-voice runs from the caller's speech end to the first agent frame that goes
 * out after it.
 */
export class CallLatency {
  private readonly recorder = new LatencyRecorder();
  /** The caller's last turn, until the first agent audio of its answer goes out. */
  private awaiting: { speechEndWall: number; turn: number } | null = null;
  /** The parts of the turn being answered, while an observer wants them. */
  private parts: { turn: number; parts: TurnLatencyParts } | null = null;
  /** The recogniser's time for the caller's last turn. */
  private lastAsrMs: number | null = null;

  constructor(
    /** The call's clock, read only when an answer's first audio goes out. */
    private readonly now: () => number,
    private readonly onTurn?: ((parts: TurnLatency) => void) | undefined,
  ) {}

  recognised(ms: number): void {
    this.lastAsrMs = ms;
    this.recorder.add('asr', ms);
  }

  /** The model starts answering user turn `turn`, which ended at `speechEndWall`. */
  answering(turn: number, speechEndWall: number): void {
    this.awaiting = { speechEndWall, turn };
    this.parts = this.onTurn ? { turn, parts: new TurnLatencyParts(turn, this.lastAsrMs, this.onTurn) } : null;
  }

  /** The caller interrupted before the answer was heard: no voice-to-voice sample for it. */
  answerAbandoned(): void {
    this.awaiting = null;
  }

  /** A model request's timing, in the reply to user turn `turn`. */
  model(
    timing: { requestSentAt: number; firstTokenAt: number | null; firstChunkAt: number | null },
    turn: number,
  ): void {
    const llm = timing.firstTokenAt === null ? null : timing.firstTokenAt - timing.requestSentAt;
    const speakable = timing.firstChunkAt === null ? null : timing.firstChunkAt - timing.requestSentAt;
    if (llm !== null) this.recorder.add('llm', llm);
    if (speakable !== null) this.recorder.add('llm_speakable', speakable);
    if (this.parts?.turn === turn) this.parts.parts.model(llm, speakable);
  }

  /** A synthesis gave its first audio `ms` after it was asked for. */
  tts(ms: number): void {
    this.recorder.add('tts', ms);
    this.parts?.parts.tts(ms);
  }

  tool(ms: number): void {
    this.recorder.add('tool', ms);
  }

  /** Agent audio went out (every frame): the first of an answer gives its voice-to-voice time. */
  audioOut(): { turn: number; e2e: number } | null {
    const awaiting = this.awaiting;
    if (!awaiting) return null;
    this.awaiting = null;
    const now = this.now();
    const e2e = now - awaiting.speechEndWall;
    this.recorder.add('e2e', e2e);
    this.parts?.parts.firstAudio(e2e, now);
    return { turn: awaiting.turn, e2e };
  }

  summary(): ReturnType<LatencyRecorder['summary']> {
    return this.recorder.summary();
  }
}
