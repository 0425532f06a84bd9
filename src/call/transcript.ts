// The call's transcript as the record keeps it: caller and agent messages and tool items, each with
// start_at/end_at in seconds from the call's start, start times never going backwards. An agent
// message opens when the far side starts playing it and ends with the words the caller heard.
// Every settled change is handed to `committed`, so the record can keep it at once (a crash then
// loses nothing said before it).
import type { TranscriptItem, TranscriptMessage } from '../records/record.ts';
import type { ToolTranscriptItem } from '../tools/transcript.ts';

export class Transcript {
  readonly messages: TranscriptMessage[] = [];
  /** The messages and the tool items, in order. */
  readonly items: TranscriptItem[] = [];
  private lastStartAt = 0;
  /** Agent messages whose playback began, by utterance id. */
  private readonly playing = new Map<number, TranscriptMessage>();

  /** `committed`: a message or tool item was settled (not a message still being played). */
  constructor(private readonly committed?: ((transcript: Transcript) => void) | undefined) {}

  /** `keypad`: the turn was keyed (its text the digits), not spoken. */
  addUser(text: string, startAt: number, endAt: number, keypad = false): TranscriptMessage {
    const message =
      startAt < this.lastStartAt ? this.insert(text, startAt, endAt) : this.add('user', text, startAt, endAt);
    if (keypad) message.input = 'keypad';
    this.committed?.(this);
    return message;
  }

  /** What the agent said last (as far as it was heard), or null before it spoke: what the caller is answering. */
  lastAgentWords(): string | null {
    for (let i = this.messages.length - 1; i >= 0; i--)
      if (this.messages[i]!.role === 'agent') return this.messages[i]!.content;
    return null;
  }

  /** Playback of agent utterance `id` began at `at` (seconds). */
  agentStarted(id: number, text: string, at: number): void {
    this.playing.set(id, this.add('agent', text, at, at));
  }

  /**
   * Agent utterance `id` ended with the words `heard`, played from `from` to `to` (seconds); with
   * none heard its message, if any, is dropped. Returns whether a message stands for it.
   */
  agentEnded(id: number, heard: string, from: number, to: number): boolean {
    const started = this.playing.get(id);
    this.playing.delete(id);
    if (!heard) {
      if (started) this.drop(started);
      return false;
    }
    const message = started ?? this.add('agent', heard, from, to);
    message.content = heard;
    message.end_at = Math.max(message.start_at, to);
    this.committed?.(this);
    return true;
  }

  /** A tool call or its result; it never starts before the message it follows. */
  addToolItem(item: ToolTranscriptItem): void {
    const startAt = Math.max(item.start_at, this.lastStartAt);
    this.lastStartAt = startAt;
    this.items.push({ ...item, start_at: startAt, end_at: Math.max(item.end_at, item.start_at, startAt) });
    this.committed?.(this);
  }

  private add(role: 'agent' | 'user', content: string, startAt: number, endAt: number): TranscriptMessage {
    const start = Math.max(startAt, this.lastStartAt);
    const message: TranscriptMessage = {
      role,
      content,
      start_at: round3(start),
      end_at: round3(Math.max(endAt, start)),
    };
    this.lastStartAt = start;
    this.messages.push(message);
    this.items.push(message);
    return message;
  }

  /**
   * A caller's turn that began before messages already kept (the agent greeted the callee's "Hello?" before its words
   * were read): it goes where it began, so start times still never go backwards.
   */
  private insert(content: string, startAt: number, endAt: number): TranscriptMessage {
    const message: TranscriptMessage = {
      role: 'user',
      content,
      start_at: round3(startAt),
      end_at: round3(Math.max(endAt, startAt)),
    };
    const after = (list: readonly { start_at: number }[]) => {
      const i = list.findIndex((m) => m.start_at > message.start_at);
      return i === -1 ? list.length : i;
    };
    this.messages.splice(after(this.messages), 0, message);
    this.items.splice(after(this.items), 0, message);
    return message;
  }

  private drop(message: TranscriptMessage): void {
    const i = this.messages.indexOf(message);
    if (i !== -1) this.messages.splice(i, 1);
    const j = this.items.indexOf(message);
    if (j !== -1) this.items.splice(j, 1);
  }
}

function round3(x: number): number {
  return Math.round(x * 1000) / 1000;
}
