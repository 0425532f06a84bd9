// A reminder once the caller has gone quiet (CallTimers says when): the agent's fixed line, or one
// the model writes when the agent asks for that. A reminder the model could not write is said as
// written: a silent caller is no reason to fail the call.
import type { Logger } from 'pino';
import type { AgentConfig } from '../agents/schema.ts';
import { reminderRequest } from './model/prompts.ts';
import type { ReplyOutcome } from './model/reply.ts';

export const REMINDER_DEFAULTS = { text: 'Are you still there?' } as const;

export interface ReminderOptions {
  agent: Pick<
    AgentConfig,
    'reminder_from_model' | 'reminder_message' | 'reminder_trigger_ms' | 'inactivity_timeout_ms'
  >;
  /** Says words without the model. */
  say(text: string): void;
  /** Asks the model to answer with `note` added to what it is told. */
  ask(note: string): void;
  log: Logger;
}

export class Reminder {
  /** The reply under way is a reminder the model is writing. */
  private modelWriting = false;

  constructor(private readonly o: ReminderOptions) {}

  private get fixedLine(): string {
    return this.o.agent.reminder_message ?? REMINDER_DEFAULTS.text;
  }

  remind(): void {
    const agent = this.o.agent;
    if (!agent.reminder_from_model) {
      this.o.say(this.fixedLine);
      return;
    }
    this.modelWriting = true;
    this.o.ask(reminderRequest(Math.round((agent.reminder_trigger_ms ?? agent.inactivity_timeout_ms) / 1000)));
  }

  /** The caller spoke: the reply under way (if any) answers them, not the silence. */
  callerSpoke(): void {
    this.modelWriting = false;
  }

  /**
   * A reply ended: true when it was a reminder the model could not write, and the fixed line was said instead (if
   * `live`).
   */
  replyEnded(outcome: ReplyOutcome, live: boolean): boolean {
    const reminder = this.modelWriting;
    this.modelWriting = false;
    if (!reminder || (outcome.kind !== 'llm_error' && outcome.kind !== 'flow_error')) return false;
    this.o.log.warn({ kind: outcome.kind }, 'the model could not write a reminder; saying the fixed one');
    if (live) this.o.say(this.fixedLine);
    return true;
  }
}
