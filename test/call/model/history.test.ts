import { describe, expect, it } from 'vitest';
import { Utterance } from '../../../src/call/agent/utterance.ts';
import { ChatHistory } from '../../../src/call/model/history.ts';

function utterance(text: string, id = 1): Utterance {
  const u = new Utterance(id);
  u.text = text;
  return u;
}

describe('ChatHistory', () => {
  it('starts with the system prompt, then the caller and the agent in order', () => {
    const h = new ChatHistory('You are a test.');
    h.said(utterance('Hello there.'), 'Hello there.');
    h.user('hi');
    expect(h.messages).toEqual([
      { role: 'system', content: 'You are a test.' },
      { role: 'assistant', content: 'Hello there.' },
      { role: 'user', content: 'hi' },
    ]);
  });

  it('remembers the session’s own words only as far as they were heard, and forgets them if none were', () => {
    const h = new ChatHistory('s');
    const greeting = utterance('alpha bravo charm', 1);
    const reminder = utterance('Are you still there?', 2);
    h.said(greeting, greeting.text);
    h.said(reminder, reminder.text);
    greeting.text = 'alpha';
    h.interrupted(greeting);
    reminder.text = '';
    h.interrupted(reminder);
    expect(h.messages).toEqual([
      { role: 'system', content: 's' },
      { role: 'assistant', content: 'alpha' },
    ]);
  });

  it('replaces each assistant message of a reply with the words heard of its utterance', () => {
    const h = new ChatHistory('s');
    h.replied({ kind: 'reply', messages: [{ role: 'assistant', content: 'Sure, I can book that for Friday.' }] }, [
      utterance('Sure, I can'),
    ]);
    expect(h.messages.at(-1)).toEqual({ role: 'assistant', content: 'Sure, I can' });
  });

  it('keeps tool calls that were answered, with their results, and drops an empty message with none', () => {
    const h = new ChatHistory('s');
    h.replied(
      {
        kind: 'reply',
        messages: [
          {
            role: 'assistant',
            content: null,
            tool_calls: [
              { id: 'c1', type: 'function', function: { name: 'book', arguments: '{}' } },
              { id: 'c2', type: 'function', function: { name: 'x', arguments: '{}' } },
            ],
          },
          { role: 'tool', tool_call_id: 'c1', content: '{"ok":true}' },
          { role: 'assistant', content: 'Booked.' },
        ],
      },
      [utterance(''), utterance('Booked.', 2)],
    );
    expect(h.messages.slice(1)).toEqual([
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'c1', type: 'function', function: { name: 'book', arguments: '{}' } }],
      },
      { role: 'tool', tool_call_id: 'c1', content: '{"ok":true}' },
      { role: 'assistant', content: 'Booked.' },
    ]);
  });

  it('remembers what was heard of a reply the model never finished', () => {
    const h = new ChatHistory('s');
    h.replied({ kind: 'aborted', messages: [], partialText: 'Let me check the calendar for' }, [
      utterance('Let me check'),
    ]);
    expect(h.messages.at(-1)).toEqual({ role: 'assistant', content: 'Let me check' });
  });
});
