// A simulated callee going through its script the way a person on the phone would: it speaks its
// phrases, and where the script says so it listens first — it waits until the agent has spoken
// and its words have played (the utterance marks the line echoes), pauses as a person does, cuts
// in on purpose, or checks what the agent said and hangs up when it was not what it expected.
import type { Logger } from 'pino';
import { utteranceMark } from '../../call/agent/utterance.ts';
import type { SimScript, SimStep } from './script.ts';
import type { TwilioStreamCaller } from './twilio-stream.ts';

/** A person's pause before answering, once the agent has finished. */
export const HUMAN_PAUSE_MS = { min: 300, max: 800 } as const;
/** How long an `expect` waits, once the agent is quiet, for its words to arrive. */
const WORDS_GRACE_MS = 1_000;

/** The agent's words as the service reports them, each utterance once it has been heard. */
export type AgentWordsSource = (onWords: (text: string) => void) => void;

export interface SimCalleeOptions {
  caller: TwilioStreamCaller;
  script: SimScript;
  /** Uniform in [0, 1): where in HUMAN_PAUSE_MS each pause falls. */
  random: () => number;
  /** Where the agent's words come from; needed only by `expect` steps. */
  agentWords?: AgentWordsSource | undefined;
  log: Logger;
}

export type SimCalleeResult = { ok: true } | { ok: false; step: number; reason: string };

/** What the callee hears of the agent: which of its utterances are playing, from their marks. */
class AgentOnTheLine {
  /** Utterances begun so far. */
  starts = 0;
  private readonly playing = new Set<number>();
  private waiters: (() => void)[] = [];

  constructor(caller: TwilioStreamCaller) {
    caller.on('mark', (name) => {
      const mark = utteranceMark.parse(name);
      if (!mark) return;
      if (mark.edge === 'start') {
        this.starts++;
        this.playing.add(mark.id);
      } else this.playing.delete(mark.id);
      this.changed();
    });
    // A clear echoes the marks of audio that never played: once they are through, nothing plays.
    caller.on('clear', () =>
      queueMicrotask(() => {
        this.playing.clear();
        this.changed();
      }),
    );
    caller.on('close', () => this.changed());
  }

  get speaking(): boolean {
    return this.playing.size > 0;
  }

  /** Resolves true at the next change, false when `ms` pass first. */
  nextChange(ms: number): Promise<boolean> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w !== wake);
        resolve(false);
      }, Math.max(0, ms));
      const wake = () => {
        clearTimeout(timer);
        resolve(true);
      };
      this.waiters.push(wake);
    });
  }

  /** Something the callee waits on happened: waiters look again. */
  changed(): void {
    for (const wake of this.waiters.splice(0)) wake();
  }
}

export class SimCallee {
  private readonly agent: AgentOnTheLine;
  private readonly words: string[] = [];
  /** Agent utterances begun, and words heard, when the caller last finished speaking. */
  private startsAtLastSay = 0;
  private wordsAtLastSay = 0;

  constructor(private readonly o: SimCalleeOptions) {
    this.agent = new AgentOnTheLine(o.caller);
    o.agentWords?.((text) => {
      this.words.push(text);
      this.agent.changed();
    });
  }

  /** Runs the script until its end, a hangup step, a failed step or the line closing. */
  async run(): Promise<SimCalleeResult> {
    const { caller, script } = this.o;
    for (const [index, step] of script.steps.entries()) {
      if (caller.closed) break;
      if (step.kind === 'hangup') break;
      const failure = await this.perform(step);
      if (failure !== null && !caller.closed) {
        this.o.log.warn({ script: script.name, step: index, reason: failure }, 'simulated caller: script failed, hanging up');
        return { ok: false, step: index, reason: failure };
      }
    }
    return { ok: true };
  }

  /** null when the step went as the script says; else why not. */
  private async perform(step: Exclude<SimStep, { kind: 'hangup' }>): Promise<string | null> {
    const { caller } = this.o;
    switch (step.kind) {
      case 'say':
        await caller.speak(step.mulaw);
        this.startsAtLastSay = this.agent.starts;
        this.wordsAtLastSay = this.words.length;
        return null;
      case 'wait':
        await caller.pause(step.ms);
        return null;
      case 'wait_for_agent':
        return this.waitForAgent(step.timeoutMs);
      case 'barge_in': {
        const deadline = performance.now() + 30_000;
        if (!(await this.agentBegan(deadline))) return 'the agent did not start speaking within 30000 ms';
        await caller.pause(step.afterMs);
        return null;
      }
      case 'expect':
        return this.expectWords(step.pattern);
    }
  }

  /** The agent has spoken since the caller last did (or is speaking); false at the deadline. */
  private async agentBegan(deadline: number): Promise<boolean> {
    while (this.agent.starts <= this.startsAtLastSay && !this.agent.speaking) {
      if (this.o.caller.closed || !(await this.agent.nextChange(deadline - performance.now()))) return false;
    }
    return true;
  }

  private async waitForAgent(timeoutMs: number): Promise<string | null> {
    const deadline = performance.now() + timeoutMs;
    const late = `the agent had not spoken and finished within ${timeoutMs} ms`;
    if (!(await this.agentBegan(deadline))) return this.o.caller.closed ? null : late;
    for (;;) {
      while (this.agent.speaking) {
        if (this.o.caller.closed) return null;
        if (!(await this.agent.nextChange(deadline - performance.now()))) return late;
      }
      // A person's pause; the agent going on within it (its next sentence) is listened to first.
      const pause = HUMAN_PAUSE_MS.min + this.o.random() * (HUMAN_PAUSE_MS.max - HUMAN_PAUSE_MS.min);
      const until = performance.now() + pause;
      let interrupted = false;
      while (!interrupted && performance.now() < until && !this.o.caller.closed) {
        interrupted = (await this.agent.nextChange(until - performance.now())) && this.agent.speaking;
      }
      if (!interrupted) return null;
    }
  }

  private async expectWords(pattern: RegExp): Promise<string | null> {
    const said = () => this.words.slice(this.wordsAtLastSay).join(' ');
    if (!this.o.agentWords) return `cannot check ${pattern}: the agent's words are not available to this callee`;
    let quietSince = this.agent.speaking ? null : performance.now();
    while (!pattern.test(said())) {
      if (this.o.caller.closed) return null;
      if (quietSince !== null && performance.now() - quietSince >= WORDS_GRACE_MS) {
        return `expected the agent to say ${pattern}, heard ${JSON.stringify(said())}`;
      }
      await this.agent.nextChange(quietSince === null ? 30_000 : WORDS_GRACE_MS - (performance.now() - quietSince));
      if (this.agent.speaking) quietSince = null;
      else quietSince ??= performance.now();
    }
    return null;
  }
}
