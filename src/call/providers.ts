// The providers one call uses for each kind — recogniser (stt), voice, model (llm) — in the agent's order: the one
// serving, the move to the next when it fails (never back: once moved, the call stays there, so it does not flap
// between a flaky provider and its fallback), and what each served, for the record's latency.providers
// (docs/fallbacks.md).
import type { FallbackReason, ProviderKind, ProviderUse } from '../records/record.ts';
import type { TimerHandle, Timers } from '../timers.ts';
import { summarize } from './latency.ts';

export type { FallbackReason, ProviderKind };

/**
 * First-result deadlines of a provider that has another after it (the last one waits as long as it takes). Each is
 * well past what a working provider needs and short enough that the caller is not left in silence for long.
 */
export const FALLBACK_DEFAULTS = {
  /**
   * From the end of the caller's turn to the recogniser's final text. An HTTP transcription of a ten-second turn
   * comes back in well under a second from a working server; three seconds of silence after speaking is already a
   * line that sounds dead, and the turn is then asked again of the next recogniser anyway.
   */
  sttFinalMs: 3_000,
  /**
   * From asking a voice for a sentence to its first audio. Embedded voices answer in tens of ms and HTTP voices in a
   * few hundred; two seconds of silence where the agent should speak is a failure the caller hears.
   */
  voiceFirstAudioMs: 2_000,
  /**
   * From sending a chat-completions request to its first token. Models with long prompts and tools take a few
   * seconds to start; past five the caller has waited longer than a person would, and the next model gets the turn.
   * The last model keeps the client's own deadline and retries (llm/client.ts LLM_CLIENT_DEFAULTS).
   */
  llmFirstTokenMs: 5_000,
} as const;

/** A deadline timer firing later than this found the process itself stalled (an event loop busy loading a model). */
const STALLED_TIMER_MS = 100;

/**
 * A first-result deadline that does not count against the provider the time this process itself stood still: a timer
 * that fires late gives the lateness back and waits that much more (on a starved machine a recogniser's model load
 * held the loop for seconds, and the voice asked meanwhile was taken for mute).
 */
export function providerDeadline(timers: Timers, ms: number, expired: () => void): { clear(): void } {
  let handle: TimerHandle | undefined;
  const arm = (wait: number): void => {
    const due = timers.now() + wait;
    handle = timers.setTimeout(() => {
      const late = timers.now() - due;
      if (late > STALLED_TIMER_MS) arm(late);
      else expired();
    }, wait);
  };
  arm(ms);
  return { clear: () => timers.clearTimeout(handle) };
}

/** A move from one provider to the next, as the metrics and the log see it. */
export interface ProviderSwitch {
  kind: ProviderKind;
  from: string;
  to: string;
  fromPosition: number;
  toPosition: number;
  reason: FallbackReason;
  /** Wall ms. */
  at: number;
}

export interface ChainEntry<P> {
  /** stt and voice: the engine; llm: the model. */
  name: string;
  provider: P;
}

/** One kind's providers of one call, in order; the one serving moves only forward. */
export class ProviderChain<P> {
  private index = 0;

  constructor(
    readonly kind: ProviderKind,
    private readonly entries: readonly ChainEntry<P>[],
    private readonly moved: (from: number, to: number, reason: FallbackReason) => void = () => undefined,
  ) {
    if (entries.length === 0) throw new Error(`no ${kind} provider`);
  }

  get current(): P {
    return this.entries[this.index]!.provider;
  }

  get name(): string {
    return this.entries[this.index]!.name;
  }

  get position(): number {
    return this.index;
  }

  /** Another provider is left after the one serving: only then does a first-result deadline apply. */
  get hasNext(): boolean {
    return this.index < this.entries.length - 1;
  }

  /**
   * The provider serving failed: the next one serves from now on (true), or none is left (false). `failed`, the
   * provider that failed: a late report of a failure already moved past changes nothing (and returns true).
   */
  fail(reason: FallbackReason, failed?: P): boolean {
    if (failed !== undefined && failed !== this.current) return true;
    if (!this.hasNext) return false;
    const from = this.index++;
    this.moved(from, this.index, reason);
    return true;
  }
}

type Stage = 'asr' | 'tts' | 'llm' | 'llm_speakable';

interface Use {
  kind: ProviderKind;
  name: string;
  position: number;
  switchedAt: number | null;
  reason: FallbackReason | null;
  firstTurn: number | null;
  lastTurn: number | null;
  samples: Partial<Record<Stage, number[]>>;
}

/** Every chain of one call, and what each provider served. */
export class CallProviders {
  private readonly chains = new Map<ProviderKind, ProviderChain<unknown>>();
  private readonly uses: Use[] = [];

  /** `now`: wall ms; `switched`: each move to another provider (metrics, log). */
  constructor(
    private readonly now: () => number,
    private readonly switched?: (change: ProviderSwitch) => void,
  ) {}

  /** The chain of `kind`, serving from its first entry. */
  chain<P>(kind: ProviderKind, entries: readonly ChainEntry<P>[]): ProviderChain<P> {
    const chain = new ProviderChain(kind, entries, (from, to, reason) => {
      const at = this.now();
      this.uses.push(this.use(kind, entries[to]!.name, to, at, reason));
      this.switched?.({
        kind,
        from: entries[from]!.name,
        to: entries[to]!.name,
        fromPosition: from,
        toPosition: to,
        reason,
        at,
      });
    });
    this.chains.set(kind, chain as ProviderChain<unknown>);
    this.uses.push(this.use(kind, entries[0]!.name, 0, null, null));
    return chain;
  }

  /** The provider of `kind` serving now served turn `turn` (null: none in particular), taking `ms` for `stage`. */
  served(kind: ProviderKind, turn: number | null, stage?: Stage, ms?: number): void {
    const chain = this.chains.get(kind);
    if (!chain) return;
    const use = this.uses.find((u) => u.kind === kind && u.position === chain.position);
    if (!use) return;
    if (turn !== null) {
      use.firstTurn ??= turn;
      use.lastTurn = Math.max(use.lastTurn ?? turn, turn);
    }
    if (stage !== undefined && ms !== undefined && Number.isFinite(ms) && ms >= 0) (use.samples[stage] ??= []).push(ms);
  }

  /** What the record keeps: each provider used, in the order the call took them; null when there were none. */
  summary(startWall: number): ProviderUse[] | null {
    if (this.uses.length === 0) return null;
    return this.uses.map((u) => {
      const out: ProviderUse = {
        kind: u.kind,
        name: u.name,
        position: u.position,
        switched_at: u.switchedAt === null ? null : Math.max(0, Math.round(u.switchedAt - startWall)) / 1000,
        reason: u.reason,
        first_turn: u.firstTurn,
        last_turn: u.lastTurn,
      };
      for (const [stage, values] of Object.entries(u.samples) as [Stage, number[]][]) {
        const stats = summarize(values);
        if (stats) out[stage] = stats;
      }
      return out;
    });
  }

  private use(
    kind: ProviderKind,
    name: string,
    position: number,
    switchedAt: number | null,
    reason: FallbackReason | null,
  ): Use {
    return { kind, name, position, switchedAt, reason, firstTurn: null, lastTurn: null, samples: {} };
  }
}
