import { describe, expect, it } from 'vitest';
import { Transcript } from '../../src/call/transcript.ts';

describe('Transcript', () => {
  it("gives the agent's last words, the user's after them aside, and none before the agent spoke", () => {
    const t = new Transcript();
    expect(t.lastAgentWords()).toBeNull();
    t.agentStarted(1, 'Hi! What is your zip code?', 0);
    expect(t.lastAgentWords()).toBe('Hi! What is your zip code?');
    t.agentEnded(1, 'Hi! What is your zip', 0, 1);
    t.addUser('nine four one', 1.5, 2);
    expect(t.lastAgentWords()).toBe('Hi! What is your zip');
  });

  it('opens an agent message when playback starts and ends it with the words heard', () => {
    const t = new Transcript();
    t.agentStarted(1, 'Hello there.', 0);
    expect(t.agentEnded(1, 'Hello there.', 0, 0.2)).toBe(true);
    expect(t.messages).toEqual([{ role: 'agent', content: 'Hello there.', start_at: 0, end_at: 0.2 }]);
  });

  it('keeps only the words heard of an interrupted message, and drops a message of which none were heard', () => {
    const t = new Transcript();
    t.agentStarted(1, 'alpha bravo charm delta', 0);
    t.agentEnded(1, 'alpha bravo', 0, 0.25);
    t.agentStarted(2, 'never heard', 0.25);
    expect(t.agentEnded(2, '', 0.25, 0.25)).toBe(false);
    expect(t.messages).toEqual([{ role: 'agent', content: 'alpha bravo', start_at: 0, end_at: 0.25 }]);
    expect(t.items).toEqual(t.messages);
  });

  it('writes a message for words heard whose playback start was never confirmed, from when they began', () => {
    const t = new Transcript();
    expect(t.agentEnded(7, 'alpha', 1.5, 1.6)).toBe(true);
    expect(t.messages).toEqual([{ role: 'agent', content: 'alpha', start_at: 1.5, end_at: 1.6 }]);
  });

  it('never lets a start time go backwards: a late message starts where the one before it did', () => {
    const t = new Transcript();
    t.addUser('my name is ann', 2, 2.8);
    t.agentStarted(1, 'Hi Ann.', 1.9);
    expect(t.messages.map((m) => m.start_at)).toEqual([2, 2]);
    expect(t.messages[1]!.end_at).toBe(2);
  });

  it("puts a caller's turn that began before messages already kept where it began (a greeting said at their pause)", () => {
    const t = new Transcript();
    t.agentStarted(1, 'Hello there.', 1.2);
    t.agentEnded(1, 'Hello there.', 1.2, 2);
    t.addUser('Hello?', 0.3, 0.9);
    expect(t.messages.map((m) => [m.role, m.start_at, m.end_at])).toEqual([
      ['user', 0.3, 0.9],
      ['agent', 1.2, 2],
    ]);
    expect(t.items).toEqual(t.messages);
  });

  it('rounds times to milliseconds', () => {
    const t = new Transcript();
    t.addUser('hi', 1.00049, 1.23456);
    expect(t.messages[0]).toMatchObject({ start_at: 1, end_at: 1.235 });
  });

  it('places a tool item after the message it follows, whatever time it reports', () => {
    const t = new Transcript();
    t.addUser('book me in', 3, 4);
    t.addToolItem({
      role: 'tool_call_invocation',
      tool_call_id: 'c1',
      name: 'book',
      arguments: '{}',
      start_at: 2.5,
      end_at: 2.5,
    });
    t.addToolItem({
      role: 'tool_call_result',
      tool_call_id: 'c1',
      content: '{"ok":true}',
      successful: true,
      start_at: 2.5,
      end_at: 4.4,
    });
    expect(t.items.map((i) => [i.role, i.start_at, i.end_at])).toEqual([
      ['user', 3, 4],
      ['tool_call_invocation', 3, 3],
      ['tool_call_result', 3, 4.4],
    ]);
    expect(t.messages).toHaveLength(1);
  });
});
