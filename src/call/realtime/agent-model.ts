// The agent's model for one call: its chat-completions model with tools (model/brain.ts), or a
// speech-to-speech model (realtime-brain.ts), which also hears the caller's audio from the line; both
// offer the agent's MCP servers' tools.
import { createAgentBrain, type AgentBrainOptions, type CountedBrain } from '../model/brain.ts';
import type { OpenWebSocket } from '../../net/websocket.ts';
import type { Timers } from '../../timers.ts';
import type { CallTransport, TransportHandlers } from '../transport.ts';
import { createRealtimeBrain, type ModelTurnSource } from './realtime-brain.ts';

interface AgentModel extends CountedBrain {
  /** The line as the session should see it: a speech-to-speech model hears every caller frame too. */
  line(transport: CallTransport): CallTransport;
  /** With the model's own turn detection (llm.turn_detection "model"), what it decides; absent otherwise. */
  turnTaking?: ModelTurnSource | undefined;
}

interface AgentModelOptions extends AgentBrainOptions {
  /** The system prompt with the call's variables filled in. */
  instructions: string;
  lineRate: number;
  timers: Timers;
  openWebSocket: OpenWebSocket;
  warn(message: string, details: Record<string, unknown>): void;
}

export function agentModelOf(o: AgentModelOptions): AgentModel {
  if (o.agent.llm.engine !== 'openai-realtime' && o.agent.llm.engine !== 'gemini-live') {
    const counted = createAgentBrain(o);
    return { ...counted, line: (transport) => transport };
  }
  const realtime = createRealtimeBrain({
    agent: o.agent,
    instructions: o.instructions,
    metadata: o.metadata,
    openWebSocket: o.openWebSocket,
    outbound: o.outbound,
    transportKind: o.transportKind,
    lineRate: o.lineRate,
    timers: o.timers,
    toolFinished: o.toolFinished,
    mcp: o.mcp,
    warn: (event) => o.warn('the speech-to-speech model reported an error', { code: event.code }),
  });
  return {
    brain: realtime.brain,
    usage: () => realtime.usage(),
    line: (transport) => hearingLine(transport, (frame) => realtime.hear(frame)),
    ...(realtime.turnTaking ? { turnTaking: realtime.turnTaking } : {}),
    close: async () => realtime.close(),
  };
}

/** `line`, with each caller frame also given to `hear` after the session had it. */
function hearingLine(line: CallTransport, hear: (frame: Int16Array) => void): CallTransport {
  return {
    get kind() {
      return line.kind;
    },
    get sampleRate() {
      return line.sampleRate;
    },
    get carrierCallId() {
      return line.carrierCallId;
    },
    attach(handlers: TransportHandlers) {
      line.attach({
        ...handlers,
        audio(frame) {
          handlers.audio(frame);
          hear(frame);
        },
      });
    },
    sendAudio(frame) {
      line.sendAudio(frame);
    },
    sendMark(name) {
      line.sendMark(name);
    },
    clear() {
      line.clear();
    },
    notify(notice) {
      line.notify(notice);
    },
    close(reason) {
      line.close(reason);
    },
  };
}
