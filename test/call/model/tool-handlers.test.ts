import { describe, expect, it } from 'vitest';
import { AgentConfigSchema } from '../../../src/agents/schema.ts';
import type { ReplyHooks } from '../../../src/call/model/reply.ts';
import { TOOL_HANDLERS, toolAction, type ToolRound } from '../../../src/call/model/tool-handlers.ts';
import type { ToolRun } from '../../../src/tools/executor.ts';
import { ToolExecutor } from '../../../src/tools/executor.ts';
import { testDispatcher } from '../../support/outbound.ts';

const tools = AgentConfigSchema.parse({
  agent_name: 'T',
  llm: { base_url: 'http://127.0.0.1:9/v1', model: 'm' },
  tools: [
    {
      type: 'api',
      name: 'book',
      url: 'http://127.0.0.1:9/book',
      speak_during_execution: true,
      execution_message: 'Let me book that.',
    },
    { type: 'api', name: 'lookup', url: 'http://127.0.0.1:9/lookup' },
    { type: 'press_digits' },
    { type: 'transfer_call', transfer_to: '+14155550123' },
    { type: 'end_call' },
    { type: 'mcp', url: 'http://127.0.0.1:9/mcp' },
  ],
}).tools;

function round(hooks: Partial<ReplyHooks> = {}): ToolRound & { order: string[] } {
  const order: string[] = [];
  let keys: Promise<unknown> = Promise.resolve();
  return {
    order,
    tools: new ToolExecutor(tools, { clock: () => 0, dispatcher: testDispatcher }),
    hooks: { confirmSpoken: async () => true, ...hooks },
    signal: new AbortController().signal,
    waitLine: 'One moment, please.',
    afterKeys(work: () => Promise<ToolRun>) {
      const next = keys.then(work);
      keys = next;
      return next;
    },
  };
}

const call = (name: string, args = '{}') => ({ id: `c_${name}`, name, arguments: args });

describe('tool handlers', () => {
  it('every kind of tool the agent schema allows has a handler', () => {
    expect(Object.keys(TOOL_HANDLERS).sort()).toEqual([...new Set(tools.map((t) => t.type))].sort());
  });

  it('an HTTP tool runs and may be slow; it is announced at once with its own line only when it asks to be', () => {
    const r = round();
    expect(toolAction(call('book'), r)).toMatchObject({ kind: 'run', slow: true, announce: 'Let me book that.' });
    expect(toolAction(call('lookup'), r)).toMatchObject({ kind: 'run', slow: true, announce: undefined });
  });

  it('end_call and transfer_call end the turn with their outcome, the transfer with its configured number', () => {
    const r = round();
    const end = toolAction(call('end_call'), r);
    const transfer = toolAction(call('transfer_call'), r);
    expect(end?.kind === 'terminal' && end.outcome([])).toEqual({
      kind: 'end_call',
      call: call('end_call'),
      messages: [],
    });
    expect(transfer?.kind === 'terminal' && transfer.outcome([])).toEqual({
      kind: 'transfer_call',
      call: call('transfer_call'),
      transferTo: '+14155550123',
      messages: [],
    });
  });

  it('a transfer on a line that cannot make one is answered with the refusal, as a tool that did not act, and the turn goes on', async () => {
    const action = toolAction(call('transfer_call'), round({ transferRefusal: 'No phone line here.' }));
    expect(action).toMatchObject({ kind: 'run', slow: false });
    const run = action?.kind === 'run' ? await action.run(() => undefined) : null;
    expect(run).toMatchObject({ failure: 'not_done', result: { successful: false, content: 'No phone line here.' } });
  });

  it('keys of two press_digits calls are pressed one after the other, in the order the model gave them', async () => {
    const pressed: string[] = [];
    const r = round({
      pressDigits: async (digits) => {
        pressed.push(`start ${digits}`);
        await new Promise((resolve) => setTimeout(resolve, digits === '1' ? 20 : 0));
        pressed.push(`end ${digits}`);
        return true;
      },
    });
    const first = toolAction(call('press_digits', '{"digits":"1"}'), r);
    const second = toolAction(call('press_digits', '{"digits":"2"}'), r);
    const runs = await Promise.all([first, second].map((a) => (a?.kind === 'run' ? a.run(() => undefined) : null)));
    expect(pressed).toEqual(['start 1', 'end 1', 'start 2', 'end 2']);
    expect(runs.map((run) => run?.modelContent)).toEqual([
      JSON.stringify({ pressed: '1' }),
      JSON.stringify({ pressed: '2' }),
    ]);
  });

  it('a tool the agent lacks has no action', () => {
    expect(toolAction(call('nowhere'), round())).toBeNull();
  });
});
