// Runs an agent's HTTP (API) tools and its MCP servers' tools (mcp/) for the model. Every failure —
// invalid arguments, timeout, refused connection, a 4xx/5xx answer, an MCP tool's error — becomes an
// unsuccessful result the model is told about, so the call goes on. Built-in tools that act on the
// call (press_digits) are validated and reported here, done by the call; end_call and transfer_call
// are the session's, never run here.
import { AGENT_DEFAULTS, type AgentTool, type ApiTool } from '../agents/schema.ts';
import type { ChatTool, ToolCallRequest } from '../llm/types.ts';
import { cutUtf8, readBodyCapped, sendRequest, type Dispatcher, type HttpResponse } from '../net/http.ts';
import { errorBodyMessage } from '../net/upstream-error.ts';
import { Watchdog } from '../net/watchdog.ts';
import { realTimers, type Timers } from '../timers.ts';
import { ownTools, toolDefinitions, type CallableTool } from './definitions.ts';
import type { McpCallTools, McpOfferedTool } from './mcp/call-tools.ts';
import { mcpFailureOf } from './mcp/connection.ts';
import { mcpResultText } from './mcp/result.ts';
import { roundSeconds, type ToolCallInvocationItem, type ToolCallResultItem } from './transcript.ts';
import { compileArgumentsValidator, type ArgumentsCheck, type ArgumentsValidator } from './validate.ts';

export const TOOL_DEFAULTS = {
  /** Read at most this much of a response; the rest is never read. */
  maxResponseBytes: 64 * 1024,
  /** Transcript and model content are cut here. */
  maxContentBytes: 16 * 1024,
} as const;

export type ToolFailure =
  | 'invalid_arguments'
  | 'timeout'
  | 'network'
  | 'http_status'
  /** An MCP tool answered with an error (isError, or a JSON-RPC error). */
  | 'tool_error'
  | 'aborted'
  | 'not_done';

export interface ToolRun {
  invocation: ToolCallInvocationItem;
  result: ToolCallResultItem;
  /** What goes back to the model in the `tool` message. */
  modelContent: string;
  failure: ToolFailure | null;
  /** Request → response, ms (latency.tool); null when no request was sent. */
  latencyMs: number | null;
}

export interface ToolExecutorOptions {
  /** Seconds from the call's start (transcript times). */
  clock: () => number;
  /** Milliseconds, for latency. */
  now?: () => number;
  timers?: Timers;
  /** The service's egress-guarded pool (net/http.ts OutboundHttp). */
  dispatcher: Dispatcher;
  maxResponseBytes?: number;
  /** The MCP tools of the call, listed when it started: offered beside the agent's own. */
  mcp?: McpCallTools | undefined;
}

function queryUrl(base: string, args: Record<string, unknown>): string {
  const url = new URL(base);
  for (const [key, value] of Object.entries(args)) {
    if (value === undefined || value === null) continue;
    const values = Array.isArray(value) ? (value as unknown[]) : [value];
    for (const v of values) url.searchParams.append(key, typeof v === 'object' ? JSON.stringify(v) : String(v));
  }
  return url.toString();
}

export class ToolExecutor {
  /** The `tools` the model sees. */
  readonly definitions: ChatTool[];
  private readonly byName = new Map<string, CallableTool>();
  private readonly validators = new Map<string, ArgumentsValidator>();
  private readonly mcp: McpCallTools | undefined;
  private readonly o: Required<Omit<ToolExecutorOptions, 'mcp'>>;

  /** `tools`: the agent's; its MCP servers' tools are those `options.mcp` offers. */
  constructor(tools: readonly AgentTool[], options: ToolExecutorOptions) {
    const callable: CallableTool[] = [...ownTools(tools), ...(options.mcp?.offered ?? [])];
    this.definitions = toolDefinitions(callable);
    for (const tool of callable) this.byName.set(tool.name, tool);
    this.definitions.forEach((d) =>
      this.validators.set(
        d.function.name,
        compileArgumentsValidator(
          d.function.parameters,
          this.byName.get(d.function.name)?.type === 'mcp' ? 'objects' : 'refuse',
        ),
      ),
    );
    this.mcp = options.mcp;
    this.o = {
      clock: options.clock,
      now: options.now ?? Date.now,
      timers: options.timers ?? realTimers,
      dispatcher: options.dispatcher,
      maxResponseBytes: options.maxResponseBytes ?? TOOL_DEFAULTS.maxResponseBytes,
    };
  }

  /** Now, in transcript time: seconds from the call's start, millisecond precision. */
  at(): number {
    return roundSeconds(this.o.clock());
  }

  find(name: string): CallableTool | undefined {
    return this.byName.get(name);
  }

  validate(name: string, argumentsText: string): ArgumentsCheck {
    const validator = this.validators.get(name);
    return validator ? validator(argumentsText) : { ok: false, error: `unknown tool ${name}` };
  }

  /**
   * Validates and runs one call of an API or MCP tool. Never throws. `invoked`: its invocation item, the moment it
   * starts.
   */
  async run(
    call: ToolCallRequest,
    signal?: AbortSignal,
    invoked?: (item: ToolCallInvocationItem) => void,
  ): Promise<ToolRun> {
    const invocation = this.invoke(call, invoked);
    const tool = this.byName.get(call.name);
    if (!tool || (tool.type !== 'api' && tool.type !== 'mcp')) {
      return this.finish(invocation, `Tool ${call.name} is not an HTTP tool of this agent.`, 'invalid_arguments', null);
    }
    const check = this.validate(call.name, call.arguments);
    if (!check.ok) {
      return this.finish(invocation, `Invalid arguments for ${call.name}: ${check.error}`, 'invalid_arguments', null);
    }
    if (tool.type === 'mcp') return this.callMcp(tool, check.args, invocation, signal);
    return this.send(tool, check.args, invocation, signal);
  }

  /**
   * Validates one call of a built-in tool that acts on the call itself (press_digits); `perform`
   * does it and says what the model is told. Never throws.
   */
  async runInCall(
    call: ToolCallRequest,
    perform: (args: Record<string, unknown>) => Promise<{ done: boolean; content: string }>,
    invoked?: (item: ToolCallInvocationItem) => void,
  ): Promise<ToolRun> {
    const invocation = this.invoke(call, invoked);
    const check = this.validate(call.name, call.arguments);
    if (!check.ok)
      return this.finish(invocation, `Invalid arguments for ${call.name}: ${check.error}`, 'invalid_arguments', null);
    const outcome = await perform(check.args);
    return this.finish(invocation, outcome.content, outcome.done ? null : 'not_done', null);
  }

  /** The invocation item of a call starting now, handed to `invoked` at once. */
  private invoke(call: ToolCallRequest, invoked?: (item: ToolCallInvocationItem) => void): ToolCallInvocationItem {
    const startAt = this.at();
    const invocation: ToolCallInvocationItem = {
      role: 'tool_call_invocation',
      tool_call_id: call.id,
      name: call.name,
      arguments: call.arguments,
      start_at: startAt,
      end_at: startAt,
    };
    invoked?.(invocation);
    return invocation;
  }

  private async send(
    tool: ApiTool,
    args: Record<string, unknown>,
    invocation: ToolCallInvocationItem,
    signal?: AbortSignal,
  ): Promise<ToolRun> {
    const sentAt = this.o.now();
    const deadline = new Watchdog(this.o.timers, signal);
    deadline.arm(Math.min(tool.timeout, AGENT_DEFAULTS.toolTimeoutMaxSeconds) * 1000);
    const hasBody = tool.method === 'POST' || tool.method === 'PUT';
    const headers: Record<string, string> = { accept: 'application/json', ...(tool.headers ?? {}) };
    if (hasBody) headers['content-type'] = 'application/json';
    let res: HttpResponse | undefined;
    try {
      res = await sendRequest(hasBody ? tool.url : queryUrl(tool.url, args), {
        method: tool.method,
        headers,
        body: hasBody ? JSON.stringify(args) : null,
        signal: deadline.signal,
        dispatcher: this.o.dispatcher,
      });
      const bytes = await readBodyCapped(res.body, this.o.maxResponseBytes);
      const latency = this.o.now() - sentAt;
      const content = cutUtf8(bytes, TOOL_DEFAULTS.maxContentBytes);
      if (res.statusCode >= 400) {
        return this.finish(
          invocation,
          content,
          'http_status',
          latency,
          this.httpErrorForModel(tool.name, res.statusCode, content),
        );
      }
      return this.finish(invocation, content, null, latency);
    } catch (err) {
      const latency = this.o.now() - sentAt;
      if (deadline.expired)
        return this.finish(invocation, `Tool ${tool.name} timed out after ${tool.timeout} s.`, 'timeout', latency);
      if (signal?.aborted) return this.finish(invocation, `Tool ${tool.name} was cancelled.`, 'aborted', latency);
      // Never the socket's error code or the egress policy's reason: they would map the service's network.
      return this.finish(invocation, `Tool ${tool.name} could not be reached.`, 'network', latency);
    } finally {
      deadline.close();
      if (res && !res.body.destroyed) res.body.destroy();
    }
  }

  /** One tools/call under the server's timeout and the turn's `signal`, told to the model as an HTTP tool's answer. */
  private async callMcp(
    tool: McpOfferedTool,
    args: Record<string, unknown>,
    invocation: ToolCallInvocationItem,
    signal?: AbortSignal,
  ): Promise<ToolRun> {
    const sentAt = this.o.now();
    const seconds = Math.min(tool.server.timeout, AGENT_DEFAULTS.toolTimeoutMaxSeconds);
    const deadline = new Watchdog(this.o.timers, signal);
    deadline.arm(seconds * 1000);
    try {
      if (!this.mcp) throw new Error('no MCP tools on this call');
      const result = await this.mcp.call(tool, args, deadline.signal);
      const latency = this.o.now() - sentAt;
      const content = mcpResultText(result, TOOL_DEFAULTS.maxContentBytes);
      if (!result.isError) return this.finish(invocation, content, null, latency);
      return this.finish(
        invocation,
        content,
        'tool_error',
        latency,
        `Tool ${tool.name} failed: ${content.slice(0, 300)}`,
      );
    } catch (err) {
      const latency = this.o.now() - sentAt;
      const { failure, message } = mcpFailureOf(err);
      // The client reports any abort as a request timeout: whose it was is read from the signals.
      const timedOut = `Tool ${tool.name} timed out after ${seconds} s.`;
      if (deadline.expired) return this.finish(invocation, timedOut, 'timeout', latency);
      if (signal?.aborted) return this.finish(invocation, `Tool ${tool.name} was cancelled.`, 'aborted', latency);
      if (failure === 'timeout') return this.finish(invocation, timedOut, 'timeout', latency);
      if (failure === 'tool_error' && message !== null) {
        const said = cutUtf8(Buffer.from(message, 'utf8'), TOOL_DEFAULTS.maxContentBytes);
        return this.finish(invocation, said, 'tool_error', latency, `Tool ${tool.name} failed: ${said.slice(0, 300)}`);
      }
      // As for an HTTP tool: never the socket's error or the egress policy's reason.
      return this.finish(invocation, `Tool ${tool.name} could not be reached.`, 'network', latency);
    } finally {
      deadline.close();
    }
  }

  private httpErrorForModel(name: string, status: number, content: string): string {
    const said = errorBodyMessage(content);
    if (said) return `Tool ${name} failed (HTTP ${status}): ${said.message}.${said.details ? ` ${said.details}` : ''}`;
    // Not an error body we know: say what we have.
    return `Tool ${name} failed (HTTP ${status}): ${content.slice(0, 300)}`;
  }

  /** An unsuccessful run is one with a failure; the model reads `modelContent` when given, else `content`. */
  private finish(
    invocation: ToolCallInvocationItem,
    content: string,
    failure: ToolFailure | null,
    latencyMs: number | null,
    modelContent?: string,
  ): ToolRun {
    const result: ToolCallResultItem = {
      role: 'tool_call_result',
      tool_call_id: invocation.tool_call_id,
      content,
      successful: failure === null,
      start_at: invocation.start_at,
      end_at: this.at(),
    };
    return { invocation, result, modelContent: modelContent ?? content, failure, latencyMs };
  }
}
