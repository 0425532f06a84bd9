import { describe, expect, it } from 'vitest';
import { Utterance } from '../../../src/call/agent/utterance.ts';
import { CallClock } from '../../../src/call/call-clock.ts';
import { ModelTurn, type AgentBrain, type ReplyVoice } from '../../../src/call/model/model-turn.ts';
import type { ReplyHooks, ReplyOutcome } from '../../../src/call/model/reply.ts';
import type { ChatMessage } from '../../../src/llm/types.ts';
import { ManualTimers } from '../../../src/timers.ts';
import { settle, silentLog } from '../../helpers/session-fakes.ts';

/** A voice that records what it is told and lets the test decide when an utterance is heard. */
class FakeVoice implements ReplyVoice {
  openUtterance: Utterance | null = null;
  readonly log: string[] = [];
  readonly utterances: Utterance[] = [];
  private seq = 0;
  begin(): Utterance {
    const u = new Utterance(++this.seq);
    this.openUtterance = u;
    this.utterances.push(u);
    this.log.push(`begin ${u.id}`);
    return u;
  }
  say(u: Utterance, text: string): void {
    u.text = u.text ? `${u.text} ${text}` : text;
    this.log.push(`say ${u.id} ${text}`);
  }
  close(u: Utterance): void {
    if (this.openUtterance === u) this.openUtterance = null;
    this.log.push(`close ${u.id}`);
  }
  pressKeys(keys: string): Utterance {
    const u = new Utterance(++this.seq);
    this.log.push(`keys ${u.id} ${keys}`);
    u.heard();
    return u;
  }
}

type Step = (hooks: ReplyHooks, signal: AbortSignal) => Promise<ReplyOutcome>;

function setup(step: Step) {
  const voice = new FakeVoice();
  const clock = new CallClock(new ManualTimers(0));
  const log: string[] = [];
  let outcome: ReplyOutcome | undefined;
  let spoken: readonly Utterance[] = [];
  const brain: AgentBrain = { respond: (_m: readonly ChatMessage[], hooks, signal) => step(hooks, signal) };
  const model = new ModelTurn({
    brain,
    voice,
    clock,
    log: silentLog,
    events: {
      llmTiming: (_t, turn) => log.push(`timing ${turn}`),
      toolStarted: (call) => log.push(`toolStarted ${call.name}`),
      toolItem: (item) => log.push(`toolItem ${item.role}`),
      toolFinished: (run) => log.push(`toolFinished ${run.invocation.name}`),
      toolWait: (line) => log.push(`toolWait ${line}`),
      finished: (o, utterances) => {
        outcome = o;
        spoken = utterances;
        log.push(`finished ${o.kind}`);
      },
    },
  });
  return { voice, model, log, outcome: () => outcome, spoken: () => spoken };
}

const reply = (text: string): ReplyOutcome => ({ kind: 'reply', messages: [{ role: 'assistant', content: text }] });

describe('ModelTurn', () => {
  it('speaks a streamed reply into one utterance and closes it when the reply ends', async () => {
    const s = setup(async (hooks) => {
      hooks.onChunk?.('Sure.');
      hooks.onChunk?.('Friday at nine works.');
      hooks.onLlmTiming?.({ requestSentAt: 0, firstTokenAt: 5, firstChunkAt: 6, endedAt: 9, attempts: 1 });
      return reply('Sure. Friday at nine works.');
    });
    s.model.answer([], 3);
    expect(s.model.running).toBe(true);
    await settle();
    expect(s.model.running).toBe(false);
    expect(s.voice.log).toEqual(['begin 1', 'say 1 Sure.', 'say 1 Friday at nine works.', 'close 1']);
    expect(s.log).toEqual(['timing 3', 'finished reply']);
    expect(s.spoken().map((u) => u.text)).toEqual(['Sure. Friday at nine works.']);
  });

  it('runs tools only after the words before them were heard: confirmSpoken closes the utterance and waits for it', async () => {
    const s = setup(async (hooks) => {
      hooks.onChunk?.('Let me check.');
      if (await hooks.confirmSpoken('Let me check.'))
        hooks.onToolStarted?.({ id: 'c1', name: 'book', arguments: '{}' });
      return reply('Booked.');
    });
    s.model.answer([], 1);
    await settle();
    expect(s.voice.log).toEqual(['begin 1', 'say 1 Let me check.', 'close 1']);
    expect(s.log).toEqual([]);
    const [u] = s.voice.utterances;
    u!.heard();
    await settle();
    expect(s.log).toEqual(['toolStarted book', 'finished reply']);
  });

  it('says the words before a tool call were not all heard when the reply was cancelled meanwhile', async () => {
    let heard: boolean | undefined;
    const s = setup(async (hooks) => {
      await Promise.resolve(); // the model answered with a tool call and no words
      heard = await hooks.confirmSpoken('');
      return { kind: 'interrupted', messages: [] };
    });
    s.model.answer([], 1);
    s.model.cancel();
    await settle();
    expect(heard).toBe(false);
  });

  it('once cancelled speaks nothing more and starts no tool; it still reports how the reply ended', async () => {
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const s = setup(async (hooks, signal) => {
      hooks.onChunk?.('One.');
      await released;
      hooks.onChunk?.('Two.');
      hooks.onToolStarted?.({ id: 'c1', name: 'book', arguments: '{}' });
      return { kind: 'aborted', messages: [], partialText: signal.aborted ? 'One. Two.' : '' };
    });
    s.model.answer([], 1);
    await settle();
    s.model.cancel();
    expect(s.model.running).toBe(false);
    release();
    await settle();
    expect(s.voice.log).toEqual(['begin 1', 'say 1 One.', 'close 1']);
    expect(s.log).toEqual(['finished aborted']);
  });

  it("writes a tool's result after its invocation even when the turn was given up meanwhile; a tool invoked after that is not written at all", async () => {
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const item = (role: 'tool_call_invocation' | 'tool_call_result', id: string) =>
      role === 'tool_call_invocation'
        ? { role, tool_call_id: id, name: 'press_digits', arguments: '{"digits":"1"}', start_at: 1, end_at: 1 }
        : { role, tool_call_id: id, content: '{"pressed":"1"}', successful: true, start_at: 1, end_at: 1.2 };
    const s = setup(async (hooks) => {
      hooks.onToolItem?.(item('tool_call_invocation', 'c1'));
      await released;
      hooks.onToolItem?.(item('tool_call_result', 'c1'));
      hooks.onToolItem?.(item('tool_call_invocation', 'c2'));
      hooks.onToolItem?.(item('tool_call_result', 'c2'));
      return { kind: 'aborted', messages: [], partialText: '' };
    });
    s.model.answer([], 1);
    await settle();
    s.model.cancel();
    release();
    await settle();
    expect(s.log).toEqual(['toolItem tool_call_invocation', 'toolItem tool_call_result', 'finished aborted']);
  });

  it('turns a brain that throws into an llm_error outcome', async () => {
    const s = setup(async () => {
      throw new Error('boom');
    });
    s.model.answer([], 1);
    await settle();
    expect(s.outcome()).toMatchObject({ kind: 'llm_error', messages: [] });
  });

  it('hands the abort signal of the reply under way to whoever asks, and none once it is over', async () => {
    let seen: AbortSignal | undefined;
    const s = setup(async (_hooks, signal) => {
      seen = signal;
      return reply('ok');
    });
    s.model.answer([], 1);
    expect(s.model.signal).toBe(seen);
    await settle();
    expect(s.model.signal).toBeUndefined();
  });
});
