// A simulated callee going through its script the way a person on the phone would: it speaks its
// phrases, and where the script says so it listens first — it waits until the agent has spoken
// and its words have played (the utterance marks the line echoes), pauses as a person does, cuts
// in on purpose, or checks what the agent said and hangs up when it was not what it expected. It
// presses keys as a phone sends them (dtmf events), and hears the agent's keys as tones in the
// audio it plays, so it can be a phone menu that branches on them. While the agent transfers it,
// it holds; it goes on with its script on the line back if the transfer fails.
import type { Logger } from 'pino';
import { DtmfDetector } from '../../audio/dtmf.ts';
import { muLawDecode } from '../../audio/g711.ts';
import { utteranceMark } from '../../call/agent/utterance.ts';
import type { CallRegistry } from '../../call/registry.ts';
import type { SimScript, SimStep } from './script.ts';
import type { TwilioStreamCaller } from './twilio-stream.ts';

/** A person's pause before answering, once the agent has finished. */
export const HUMAN_PAUSE_MS = { min: 300, max: 800 } as const;
/** How long an `expect` waits, once the agent is quiet, for its words to arrive. */
const WORDS_GRACE_MS = 1_000;
/** A key pressed on the phone lasts this long (tone and gap) before the next. */
const KEY_PRESS_MS = 200;
/** Ends an entry of keys before its count, and is not part of it. */
const ENTRY_TERMINATOR = '#';

/** The agent's words as the service reports them, each utterance once it has been heard. */
export type AgentWordsSource = (onWords: (text: string) => void) => void;

/**
 * The agent's words, each utterance once heard, from the live call's events. The call is under way
 * by the time the service sends its first message on the stream, so that is when to listen.
 */
export function liveAgentWords(
  registry: () => CallRegistry | undefined,
  callId: string,
  caller: TwilioStreamCaller,
): AgentWordsSource {
  return (onWords) => {
    const tryListen = () => {
      const call = registry()?.get(callId);
      if (!call) return;
      caller.off('message', tryListen);
      call.listen({
        notice: (notice) => {
          if (notice.type === 'transcript' && notice.role === 'agent' && notice.final) onWords(notice.text);
        },
        audio: () => undefined,
        ended: () => undefined,
      });
    };
    caller.on('message', tryListen);
  };
}

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
  /** Keypad tones heard in what played, not yet taken by a wait_for_digits step. */
  keys = '';
  private readonly playing = new Set<number>();
  private waiters: (() => void)[] = [];

  constructor(caller: TwilioStreamCaller) {
    this.listen(caller);
  }

  /** Hears `caller`'s line: the first, or the one the caller came back on after a transfer. */
  listen(caller: TwilioStreamCaller): void {
    this.playing.clear();
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
    const tones = new DtmfDetector(8000);
    // Every frame that plays is listened to: one buffer for all of them (a load run has hundreds of callees).
    const pcm = new Int16Array(160);
    caller.on('played', (frame) => {
      const heard = tones.push(muLawDecode(frame.payload, pcm.subarray(0, frame.payload.length)));
      if (heard.length === 0) return;
      this.keys += heard.join('');
      this.changed();
    });
  }

  get speaking(): boolean {
    return this.playing.size > 0;
  }

  /** Resolves true at the next change, false when `ms` pass first. */
  nextChange(ms: number): Promise<boolean> {
    return new Promise((resolve) => {
      const timer = setTimeout(
        () => {
          this.waiters = this.waiters.filter((w) => w !== wake);
          resolve(false);
        },
        Math.max(0, ms),
      );
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
  /** The keys the last wait_for_digits step heard. */
  private lastEntry: string | null = null;
  /** The line the callee is on: the first, or the one back after a failed transfer. */
  private caller: TwilioStreamCaller;
  /** A transfer under way: resolves once the callee is back on a line, or left for the destination. */
  private holding: { back: Promise<void>; done: () => void } | null = null;
  private holds = 0;

  constructor(private readonly o: SimCalleeOptions) {
    this.caller = o.caller;
    this.agent = new AgentOnTheLine(o.caller);
    o.agentWords?.((text) => {
      this.words.push(text);
      this.agent.changed();
    });
  }

  /** The current line (it changes when the caller comes back from a failed transfer). */
  get line(): TwilioStreamCaller {
    return this.caller;
  }

  /** The agent is transferring the caller: the line is about to close, and the script waits. */
  hold(): void {
    let done!: () => void;
    const back = new Promise<void>((resolve) => (done = resolve));
    this.holding = { back, done };
    this.holds++;
  }

  /** The transfer failed: the caller is back with the agent on `line`, listening for it anew. */
  resume(line: TwilioStreamCaller): void {
    this.caller = line;
    this.agent.listen(line);
    this.startsAtLastSay = this.agent.starts;
    this.wordsAtLastSay = this.words.length;
    this.holding?.done();
  }

  /** The transfer connected: the caller is with the destination, and the script is over. */
  release(): void {
    this.holding?.done();
  }

  /** Runs the script until its end, a hangup step, a failed step or the line closing. */
  async run(): Promise<SimCalleeResult> {
    return this.continueWith(this.o.script.steps);
  }

  /**
   * Runs `steps` after those run before: a simulated caller that decides each turn as it goes (from
   * what the agent said) gives its steps a turn at a time.
   */
  async continueWith(steps: readonly SimStep[]): Promise<SimCalleeResult> {
    const outcome = await this.runSteps(steps, '');
    if (outcome === 'hangup' || outcome === 'done') return { ok: true };
    this.o.log.warn(
      { script: this.o.script.name, step: outcome.step, reason: outcome.reason },
      'simulated caller: script failed, hanging up',
    );
    return { ok: false, step: outcome.step, reason: outcome.reason };
  }

  /** The agent's words heard since the caller last spoke or pressed keys. */
  agentWordsSinceCaller(): string {
    return this.words.slice(this.wordsAtLastSay).join(' ');
  }

  /** `path`: where these steps are in the script ("3.1." inside step 3's branch "1"), for failures. */
  private async runSteps(
    steps: readonly SimStep[],
    path: string,
  ): Promise<'done' | 'hangup' | { step: number; reason: string }> {
    for (let index = 0; index < steps.length; index++) {
      const step = steps[index]!;
      if (!(await this.onTheLine())) return 'done';
      if (step.kind === 'hangup') return 'hangup';
      const holds = this.holds;
      const failure = await this.perform(step);
      // The line went away under this step for a transfer: on the line back, the step is done again.
      if (this.holds !== holds) {
        if (!(await this.onTheLine())) return 'done';
        index--;
        continue;
      }
      if (failure !== null && !this.caller.closed) {
        const topStep = path === '' ? index : Number(path.split('.')[0]);
        return { step: topStep, reason: path === '' ? failure : `step ${path}${index}: ${failure}` };
      }
      if (step.kind === 'wait_for_digits' && step.branches && this.lastEntry !== null) {
        const branch = step.branches.get(this.lastEntry) ?? [];
        const outcome = await this.runSteps(branch, `${path}${index}.${this.lastEntry}.`);
        if (outcome !== 'done') return outcome;
      }
    }
    return 'done';
  }

  /** Whether the callee is on a line, once any transfer under way has gone one way or the other. */
  private async onTheLine(): Promise<boolean> {
    if (this.holding) {
      await this.holding.back;
      this.holding = null;
    }
    return !this.caller.closed;
  }

  /** null when the step went as the script says; else why not. */
  private async perform(step: Exclude<SimStep, { kind: 'hangup' }>): Promise<string | null> {
    const { caller } = this;
    switch (step.kind) {
      case 'digits':
        for (const key of step.keys) {
          caller.sendDtmf(key);
          await caller.pause(KEY_PRESS_MS);
        }
        this.startsAtLastSay = this.agent.starts;
        this.wordsAtLastSay = this.words.length;
        return null;
      case 'wait_for_digits':
        return this.waitForDigits(step.count, step.timeoutMs, step.branches);
      case 'say':
        await caller.speak(step.mulaw);
        this.startsAtLastSay = this.agent.starts;
        this.wordsAtLastSay = this.words.length;
        return null;
      case 'wait':
        await caller.pause(step.ms);
        return null;
      case 'wait_for_agent':
        return this.waitForAgent(step.timeoutMs, step.pauseMs);
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

  /** The agent's next entry of keys: `count` of them, or fewer ended by the terminator. */
  private async waitForDigits(
    count: number,
    timeoutMs: number,
    branches: Map<string, readonly SimStep[]> | null,
  ): Promise<string | null> {
    const deadline = performance.now() + timeoutMs;
    this.lastEntry = null;
    for (;;) {
      const end = this.agent.keys.indexOf(ENTRY_TERMINATOR);
      if (end !== -1 && end < count) {
        this.lastEntry = this.agent.keys.slice(0, end);
        this.agent.keys = this.agent.keys.slice(end + 1);
        break;
      }
      if (this.agent.keys.length >= count) {
        this.lastEntry = this.agent.keys.slice(0, count);
        this.agent.keys = this.agent.keys.slice(count);
        break;
      }
      if (this.caller.closed) return null;
      if (!(await this.agent.nextChange(deadline - performance.now()))) {
        return `expected ${count} key${count === 1 ? '' : 's'} within ${timeoutMs} ms, heard ${JSON.stringify(this.agent.keys)}`;
      }
    }
    if (branches && !branches.has(this.lastEntry)) {
      return `the agent pressed ${JSON.stringify(this.lastEntry)}; this menu takes ${[...branches.keys()].map((k) => JSON.stringify(k)).join(', ')}`;
    }
    return null;
  }

  /** The agent has spoken since the caller last did (or is speaking); false at the deadline. */
  private async agentBegan(deadline: number): Promise<boolean> {
    while (this.agent.starts <= this.startsAtLastSay && !this.agent.speaking) {
      if (this.caller.closed || !(await this.agent.nextChange(deadline - performance.now()))) return false;
    }
    return true;
  }

  private async waitForAgent(timeoutMs: number, fixedPauseMs?: number): Promise<string | null> {
    const deadline = performance.now() + timeoutMs;
    const late = `the agent had not spoken and finished within ${timeoutMs} ms`;
    if (!(await this.agentBegan(deadline))) return this.caller.closed ? null : late;
    for (;;) {
      while (this.agent.speaking) {
        if (this.caller.closed) return null;
        if (!(await this.agent.nextChange(deadline - performance.now()))) return late;
      }
      // A person's pause; the agent going on within it (its next sentence) is listened to first.
      const pause = fixedPauseMs ?? HUMAN_PAUSE_MS.min + this.o.random() * (HUMAN_PAUSE_MS.max - HUMAN_PAUSE_MS.min);
      const until = performance.now() + pause;
      let interrupted = false;
      while (!interrupted && performance.now() < until && !this.caller.closed) {
        interrupted = (await this.agent.nextChange(until - performance.now())) && this.agent.speaking;
      }
      if (!interrupted) return null;
    }
  }

  private async expectWords(pattern: RegExp): Promise<string | null> {
    const said = () => this.agentWordsSinceCaller();
    if (!this.o.agentWords) return `cannot check ${pattern}: the agent's words are not available to this callee`;
    let quietSince = this.agent.speaking ? null : performance.now();
    while (!pattern.test(said())) {
      if (this.caller.closed) return null;
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
