// What a reply's round does with each kind of tool the model called, one handler per kind: an HTTP
// or MCP tool runs (and counts toward the line said while tools work), keys are pressed one call after
// another, end_call and transfer_call end the turn for the session to act on (a transfer the line
// cannot make is answered like a tool that failed). A new kind of tool is one more entry here.
import type { CallableTool } from '../../tools/definitions.ts';
import type { ChatMessage, ToolCallRequest } from '../../llm/types.ts';
import type { ToolExecutor, ToolRun } from '../../tools/executor.ts';
import type { ToolTranscriptItem } from '../../tools/transcript.ts';
import type { ReplyHooks, ReplyOutcome } from './reply.ts';

/** One round's tools as the handlers see them. */
export interface ToolRound {
  tools: ToolExecutor;
  hooks: ReplyHooks;
  /** The turn's budget: aborts an HTTP tool with the turn. */
  signal: AbortSignal;
  /** The line said while tools work, unless a tool gives its own. */
  waitLine: string;
  /** Runs `work` once the keys pressed before it in this round have played. */
  afterKeys(work: () => Promise<ToolRun>): Promise<ToolRun>;
}

/** What the round does with one tool call. */
export type ToolAction =
  /**
   * Runs beside the round's other tools. `slow`: it may take a while (the caller hears a line); `announce`: that line,
   * at once.
   */
  | {
      kind: 'run';
      slow: boolean;
      announce?: string | undefined;
      run(invoked: (item: ToolTranscriptItem) => void): Promise<ToolRun>;
    }
  /** Ends the turn once the round's other tools ran; the session acts on the outcome. */
  | { kind: 'terminal'; outcome(messages: ChatMessage[]): ReplyOutcome };

type ToolHandler<T extends CallableTool> = (call: ToolCallRequest, tool: T, round: ToolRound) => ToolAction;
type ToolHandlers = { [K in CallableTool['type']]: ToolHandler<Extract<CallableTool, { type: K }>> };

export const TOOL_HANDLERS: ToolHandlers = {
  api(call, tool, round) {
    const announce = tool.speak_during_execution ? (tool.execution_message ?? round.waitLine) : undefined;
    return {
      kind: 'run',
      slow: true,
      announce,
      run(invoked) {
        round.hooks.onToolStarted?.(call);
        return round.tools.run(call, round.signal, invoked);
      },
    };
  },
  mcp(call, _tool, round) {
    return {
      kind: 'run',
      slow: true,
      run(invoked) {
        round.hooks.onToolStarted?.(call);
        return round.tools.run(call, round.signal, invoked);
      },
    };
  },
  press_digits(call, _tool, round) {
    return {
      kind: 'run',
      slow: false,
      run: (invoked) =>
        round.afterKeys(() =>
          round.tools.runInCall(call, (args) => pressDigits(round.hooks, String(args.digits)), invoked),
        ),
    };
  },
  transfer_call(call, tool, round) {
    const refusal = round.hooks.transferRefusal;
    if (refusal !== undefined)
      return {
        kind: 'run',
        slow: false,
        run: (invoked) => round.tools.runInCall(call, async () => ({ done: false, content: refusal }), invoked),
      };
    return {
      kind: 'terminal',
      outcome: (messages) => ({ kind: 'transfer_call', call, transferTo: tool.transfer_to, messages }),
    };
  },
  end_call(call) {
    return { kind: 'terminal', outcome: (messages) => ({ kind: 'end_call', call, messages }) };
  },
};

/** The action for `call`, by its tool's kind; null for a tool the agent lacks. */
export function toolAction(call: ToolCallRequest, round: ToolRound): ToolAction | null {
  const tool = round.tools.find(call.name);
  if (!tool) return null;
  const handler = TOOL_HANDLERS[tool.type] as ToolHandler<CallableTool>;
  return handler(call, tool, round);
}

/** What the model is told of a press_digits call. */
async function pressDigits(hooks: ReplyHooks, digits: string): Promise<{ done: boolean; content: string }> {
  if (!hooks.pressDigits) return { done: false, content: 'Keypad tones cannot be played on this call.' };
  if (await hooks.pressDigits(digits)) return { done: true, content: JSON.stringify({ pressed: digits }) };
  return {
    done: false,
    content: `The keys ${digits} were not all pressed: the call was interrupted while the tones played.`,
  };
}
