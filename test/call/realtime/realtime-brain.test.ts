// The speech-to-speech brain against the Gemini Live stand-in over real sockets: a function call the model
// withdraws (toolCallCancellation) while its HTTP tool runs is aborted, gets no toolResponse, and the record
// says it was cancelled rather than giving a result; the reply ends there instead of waiting for the model.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AgentConfigSchema } from '../../../src/agents/schema.ts';
import { muLawDecode } from '../../../src/audio/g711.ts';
import { createRealtimeBrain } from '../../../src/call/realtime/realtime-brain.ts';
import type { ChatMessage } from '../../../src/llm/types.ts';
import { EgressPolicy } from '../../../src/net/egress.ts';
import { OutboundHttp } from '../../../src/net/http.ts';
import { webSocketOpener } from '../../../src/net/websocket.ts';
import { realTimers } from '../../../src/timers.ts';
import type { ToolTranscriptItem } from '../../../src/tools/transcript.ts';
import { fixtureUlaw } from '../../helpers/phone.ts';
import { GeminiLiveStandIn } from '../../llm/realtime/gemini-stand-in.ts';

describe('a speech-to-speech brain on Gemini Live', () => {
  let standIn: GeminiLiveStandIn;
  let tool: Server;
  /** Requests the tool's endpoint got, and whether each was aborted before it answered (it never does). */
  const requests: { aborted: boolean }[] = [];
  beforeAll(async () => {
    standIn = await GeminiLiveStandIn.start({
      script: (heard, output) =>
        output !== null
          ? { say: 'done' }
          : /cancel/.test(heard)
            ? { call: { name: 'cancel_order', arguments: '{"reason":"asked"}' } }
            : { say: `you said ${heard}` },
    });
    tool = createServer((req, res) => {
      const request = { aborted: false };
      requests.push(request);
      req.resume();
      // The connection closes with no answer sent: the client gave the request up.
      res.on('close', () => (request.aborted = !res.writableEnded));
      // The caller cut the model's turn while the tool runs: the model withdraws the call.
      standIn.cancelToolCall();
    });
    await new Promise<void>((resolve) => tool.listen(0, '127.0.0.1', resolve));
  });
  afterAll(async () => {
    tool.closeAllConnections();
    await new Promise<void>((resolve) => tool.close(() => resolve()));
    await standIn.close();
  });

  it('a function call the model withdraws while its tool runs is aborted, gets no toolResponse, and is recorded as cancelled', async () => {
    const port = (tool.address() as AddressInfo).port;
    const agent = AgentConfigSchema.parse({
      agent_name: 'Orders',
      llm: { engine: 'gemini-live', base_url: standIn.url, model: 'gemini-live-2.5-flash-preview' },
      tools: [{ type: 'api', name: 'cancel_order', url: `http://127.0.0.1:${port}/cancel` }],
    });
    const policy = EgressPolicy.fromEnv('127.0.0.0/8');
    const brain = createRealtimeBrain({
      agent,
      instructions: 'Cancel orders.',
      openWebSocket: webSocketOpener(policy),
      outbound: new OutboundHttp(policy),
      transportKind: 'twilio',
      lineRate: 8000,
      timers: realTimers,
      metadata: {
        call_id: 'c1',
        agent_id: 'a',
        agent_version: 1,
        call_type: 'phone_call',
        call_from: null,
        call_to: null,
        metadata: {},
        dynamic_variables: {},
      },
    });
    const from = standIn.received.length;
    const speech = muLawDecode(fixtureUlaw('09-i-want-to-cancel'));
    const line = new Int16Array(speech.length + 8000 * 0.3);
    line.set(speech);
    for (let at = 0; at < line.length; at += 160) brain.hear(line.subarray(at, at + 160));
    const messages: ChatMessage[] = [
      { role: 'system', content: 'Cancel orders.' },
      { role: 'user', content: 'I want to cancel' },
    ];
    const items: ToolTranscriptItem[] = [];
    const started = Date.now();
    const outcome = await brain.brain.respond(
      messages,
      { confirmSpoken: async () => true, onToolItem: (item) => items.push(item) },
      new AbortController().signal,
      () => (Date.now() - started) / 1000,
    );
    await brain.close();
    for (let i = 0; i < 100 && !requests[0]?.aborted; i++) await new Promise((r) => setTimeout(r, 20));
    expect(outcome.kind).toBe('reply');
    expect(requests).toEqual([{ aborted: true }]);
    expect(standIn.cancelled).toHaveLength(1);
    expect(standIn.received.slice(from).filter((m) => m.kind === 'toolResponse')).toEqual([]);
    expect(items.map((i) => i.role)).toEqual(['tool_call_invocation', 'tool_call_result']);
    expect(items[1]).toMatchObject({
      tool_call_id: standIn.cancelled[0],
      successful: false,
      content: 'Tool cancel_order was cancelled.',
    });
  }, 30_000);
});
