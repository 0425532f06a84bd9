// A warm transfer's summary when the agent's model is a speech-to-speech one (the real realtime brain against
// the provider stand-ins): written by a chat-completions model in llm.fallback when there is one, else by the
// model itself as an out-of-band text answer where its protocol has one (OpenAI Realtime), else the fixed
// summary; never an audio answer in the model's conversation that nobody hears.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { AgentConfigSchema } from '../../../src/agents/schema.ts';
import type { AgentVoice } from '../../../src/call/agent/agent-voice.ts';
import type { FlowIntent } from '../../../src/call/flow.ts';
import { transferSummaryRequest } from '../../../src/call/model/prompts.ts';
import { createRealtimeBrain } from '../../../src/call/realtime/realtime-brain.ts';
import { askTransferSummary } from '../../../src/call/transfer/summary.ts';
import { TransferFlow } from '../../../src/call/transfer/transfer-flow.ts';
import { WARM_TRANSFER_DEFAULTS } from '../../../src/call/transfer/warm-transfer.ts';
import type { CallTransport } from '../../../src/call/transport.ts';
import { LLM_CLIENT_DEFAULTS } from '../../../src/llm/client.ts';
import type { ChatMessage, LlmRequestMetadata } from '../../../src/llm/types.ts';
import { EgressPolicy } from '../../../src/net/egress.ts';
import { OutboundHttp } from '../../../src/net/http.ts';
import { webSocketOpener } from '../../../src/net/websocket.ts';
import { ManualTimers } from '../../../src/timers.ts';
import { settle, silentLog } from '../../helpers/session-fakes.ts';
import { GeminiLiveStandIn } from '../../llm/realtime/gemini-stand-in.ts';
import { OpenAiRealtimeStandIn } from '../../llm/realtime/openai-stand-in.ts';
import { startServer, type TestServer } from '../../support/http-server.ts';

const TO = '+14155550123';
const PROMPT = 'You are the front desk of a bakery.';
/** The stand-in gives no out-of-band answer to an agent with this prompt. */
const SILENT_PROMPT = 'You never answer asides.';
const SUMMARY = 'Jane Roe wants to change tomorrow’s cake order.';
const metadata: LlmRequestMetadata = {
  call_id: 'c1',
  agent_id: 'a',
  agent_version: 1,
  call_type: 'phone_call',
  call_from: null,
  call_to: null,
  metadata: {},
  dynamic_variables: {},
};
const history: ChatMessage[] = [
  { role: 'system', content: PROMPT },
  { role: 'user', content: 'Hi, this is Jane Roe, I need to change my cake order for tomorrow.' },
  { role: 'assistant', content: 'Let me put you through to someone who can.' },
];
const open = webSocketOpener(EgressPolicy.fromEnv('127.0.0.0/8'));
const outbound = new OutboundHttp(EgressPolicy.fromEnv('127.0.0.0/8'));

let openAi: OpenAiRealtimeStandIn;
let gemini: GeminiLiveStandIn;
let chat: TestServer | undefined;
beforeAll(async () => {
  openAi = await OpenAiRealtimeStandIn.start({
    aside: (instructions) =>
      instructions.startsWith(SILENT_PROMPT)
        ? null
        : instructions.endsWith(transferSummaryRequest())
          ? SUMMARY
          : 'not the summary request',
  });
  gemini = await GeminiLiveStandIn.start();
}, 60_000);
afterAll(async () => {
  await openAi?.close();
  await gemini?.close();
});
afterEach(async () => {
  await chat?.close();
  chat = undefined;
});

function brainFor(llm: Record<string, unknown>, instructions = PROMPT, timers = new ManualTimers()) {
  const agent = AgentConfigSchema.parse({
    agent_name: 'Desk',
    llm,
    tools: [{ type: 'transfer_call', transfer_to: TO, mode: 'warm' }],
  });
  return createRealtimeBrain({
    agent,
    instructions,
    metadata,
    openWebSocket: open,
    outbound,
    transportKind: 'twilio',
    lineRate: 8000,
    timers,
  });
}

const openAiLlm = () => ({
  engine: 'openai-realtime',
  base_url: openAi.url,
  model: 'gpt-realtime',
  api_key: 'sk-test',
});

/** A chat-completions server answering `content`. */
async function chatModel(content: string): Promise<TestServer> {
  return startServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(
      JSON.stringify({
        id: 'x',
        object: 'chat.completion',
        created: 1,
        model: 'm',
        choices: [{ index: 0, finish_reason: 'stop', message: { role: 'assistant', content } }],
      }),
    );
  });
}

const never = new Promise<void>(() => undefined);

describe('a warm transfer summary from a speech-to-speech agent', () => {
  it('is written by the OpenAI Realtime model as an out-of-band text answer: no audio response, nothing added to its conversation', async () => {
    const realtime = brainFor(openAiLlm());
    try {
      const before = openAi.received.length;
      const summary = await askTransferSummary(realtime.brain, history, () => 0, never);
      expect(summary).toBe(SUMMARY);
      const sent = openAi.received.slice(before).filter((e) => e.type !== 'input_audio_buffer.append');
      expect(sent.map((e) => e.type)).toEqual(['session.update', 'response.create']);
      expect(sent[1]).toEqual({
        type: 'response.create',
        response: {
          conversation: 'none',
          output_modalities: ['text'],
          instructions: `${PROMPT}\n\n${transferSummaryRequest()}`,
          metadata: { aside: 'true' },
        },
      });
      expect(openAi.responses).toEqual([]);
    } finally {
      await realtime.close();
    }
  });

  it("is written by the agent's first chat-completions model in llm.fallback, from the call's history, when it has one; the speech-to-speech model is asked nothing", async () => {
    chat = await chatModel(SUMMARY);
    const realtime = brainFor({ ...openAiLlm(), fallback: [{ base_url: `${chat.url}/v1`, model: 'm' }] });
    try {
      const before = openAi.received.length;
      expect(await askTransferSummary(realtime.brain, history, () => 0, never)).toBe(SUMMARY);
      const request = JSON.parse(chat.requests[0]!.body) as { messages: ChatMessage[]; stream: boolean };
      expect(request.stream).toBe(false);
      expect(request.messages).toEqual([...history, { role: 'system', content: transferSummaryRequest() }]);
      await settle();
      expect(openAi.received.slice(before).map((e) => e.type)).toEqual(['session.update']);
    } finally {
      await realtime.close();
    }
  });

  it('an out-of-band answer that does not come within asideTimeoutMs fails the summary as a model failure (the warm transfer then says the fixed one)', async () => {
    const timers = new ManualTimers();
    const realtime = brainFor(openAiLlm(), SILENT_PROMPT, timers);
    try {
      const asked = openAi.asides.length;
      const summary = askTransferSummary(realtime.brain, history, () => 0, never);
      for (let i = 0; i < 200 && openAi.asides.length === asked; i++) await new Promise((r) => setTimeout(r, 10));
      expect(openAi.asides.length).toBe(asked + 1);
      timers.advance(LLM_CLIENT_DEFAULTS.firstTokenTimeoutMs);
      await expect(summary).rejects.toMatchObject({ code: 'LLM_FIRST_TOKEN_TIMEOUT' });
    } finally {
      await realtime.close();
    }
  });

  it('is the fixed summary on Gemini Live without a chat-completions model (its protocol has no out-of-band text answer): the model is asked nothing', async () => {
    const realtime = brainFor({
      engine: 'gemini-live',
      base_url: gemini.url,
      model: 'gemini-live-2.5-flash-preview',
      api_key: 'gm',
    });
    try {
      const before = gemini.received.length;
      expect(await askTransferSummary(realtime.brain, history, () => 0, never)).toBe(
        WARM_TRANSFER_DEFAULTS.fallbackSummary,
      );
      await settle();
      expect(gemini.received.slice(before).map((e) => e.kind)).toEqual(['setup']);
    } finally {
      await realtime.close();
    }
  });

  it("is said to whoever answers in the agent's voice, and the transfer ends call_transfer with the summary in its message", async () => {
    const realtime = brainFor(openAiLlm());
    const said: string[] = [];
    const intents: FlowIntent[] = [];
    const voice = {
      finished: async () => undefined,
      play: () => ({ done: never.then(() => true) }),
      interrupt: () => [],
      sayAll: (text: string) => void said.push(text),
      stop: () => undefined,
      mark: () => undefined,
    } as unknown as AgentVoice;
    const timers = new ManualTimers(5_000);
    const leg = { attach: () => undefined, close: () => undefined } as unknown as CallTransport;
    const flow: TransferFlow = new TransferFlow({
      tools: AgentConfigSchema.parse({
        agent_name: 'Desk',
        llm: openAiLlm(),
        tools: [{ type: 'transfer_call', transfer_to: TO, mode: 'warm' }],
      }).tools,
      warm: {
        holdAudio: async () => new Int16Array(8),
        consult: async () => void queueMicrotask(() => flow.consultAnswered(leg)),
        bridge: async () => undefined,
      },
      voice,
      consultVoice: () => voice,
      summary: () => askTransferSummary(realtime.brain, history, () => 0, never),
      timers,
      host: { live: true, act: (intent) => void intents.push(intent) },
      log: silentLog,
    });
    try {
      flow.start('transfer_call', TO);
      for (let i = 0; i < 200 && !intents.some((x) => x.kind === 'end'); i++)
        await new Promise((r) => setTimeout(r, 10));
      expect(said).toEqual([SUMMARY]);
      expect(intents.at(-1)).toEqual({
        kind: 'end',
        reason: 'call_transfer',
        message: `Transferred to ${TO} after telling them: ${SUMMARY}`,
        transferred: { destination: TO, at: 5_000 },
      });
    } finally {
      await realtime.close();
    }
  });
});
