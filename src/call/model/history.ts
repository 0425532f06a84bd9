// What the model is told of the conversation: the system prompt, the caller's turns, and of the
// agent's words only those the caller actually heard (a reply cut off by barge-in is remembered as
// far as it played).
import type { ChatMessage } from '../../llm/types.ts';
import type { Utterance } from '../agent/utterance.ts';
import type { ReplyOutcome } from './reply.ts';

export class ChatHistory {
  readonly messages: ChatMessage[] = [];
  /** Words the session says itself (greeting, reminder), by their utterance. */
  private readonly ownWords = new WeakMap<Utterance, { role: 'assistant'; content: string }>();

  constructor(systemPrompt: string) {
    this.messages.push({ role: 'system', content: systemPrompt });
  }

  /** Words the session said without the model: remembered in full unless they are cut. */
  said(u: Utterance, text: string): void {
    const entry = { role: 'assistant' as const, content: text };
    this.ownWords.set(u, entry);
    this.messages.push(entry);
  }

  /** `u` was cut: words of the session's own are remembered as far as they were heard, or not at all. */
  interrupted(u: Utterance): void {
    const entry = this.ownWords.get(u);
    if (!entry) return;
    this.ownWords.delete(u);
    entry.content = u.text;
    if (!u.text) this.messages.splice(this.messages.indexOf(entry), 1);
  }

  /** `before`: words of the session's own that answered this turn (a greeting said at the callee's "Hello?"). */
  user(text: string, before?: Utterance): void {
    const entry = before && this.ownWords.get(before);
    const at = entry ? this.messages.indexOf(entry) : -1;
    if (at === -1) this.messages.push({ role: 'user', content: text });
    else this.messages.splice(at, 0, { role: 'user', content: text });
  }

  /** Context from outside the conversation (the API): a system message from here on. */
  note(content: string): void {
    this.messages.push({ role: 'system', content });
  }

  /** A reply ended: what it added, each assistant message replaced by the words heard of it. */
  replied(outcome: ReplyOutcome, utterances: readonly Utterance[]): void {
    const said = [...utterances];
    const messages = outcome.messages;
    for (let i = 0; i < messages.length; i++) {
      const m = messages[i]!;
      if (m.role !== 'assistant') {
        this.messages.push(m);
        continue;
      }
      const u = said.shift();
      const content = u ? u.text : (m.content ?? '');
      const answered = m.tool_calls?.filter((c) =>
        messages.slice(i + 1).some((n) => n.role === 'tool' && n.tool_call_id === c.id),
      );
      if (!content && !answered?.length) continue;
      this.messages.push(
        answered?.length
          ? { role: 'assistant', content: content || null, tool_calls: answered }
          : { role: 'assistant', content },
      );
    }
    // Spoken words of a reply the model never finished (barge-in mid-stream).
    for (const u of said) if (u.text) this.messages.push({ role: 'assistant', content: u.text });
  }
}
