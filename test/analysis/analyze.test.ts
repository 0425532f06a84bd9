import { Writable } from 'node:stream';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { AgentConfigSchema, type AgentConfig } from '../../src/agents/schema.ts';
import { analyzeCall, ANALYSIS_REQUEST_TAG, parseAnalysisReply } from '../../src/analysis/analyze.ts';
import type { LlmRequestMetadata } from '../../src/llm/types.ts';
import { startServer, type Handler, type TestServer } from '../support/http-server.ts';
import { testDispatcher } from '../support/outbound.ts';

const metadata: LlmRequestMetadata = {
  call_id: 'c7',
  agent_id: 'a',
  agent_version: 1,
  call_type: 'api',
  call_from: null,
  call_to: null,
  metadata: {},
  dynamic_variables: {},
};
const transcript = [
  { role: 'agent', content: 'Hello, how can I help?' },
  { role: 'user', content: 'I want to cancel.' },
];

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

function agentAt(url: string): AgentConfig {
  return AgentConfigSchema.parse({
    agent_name: 'a',
    llm: { base_url: url, model: 'm', api_key: 'k' },
    analysis: {
      custom_fields: [
        { name: 'wants_cancel', type: 'boolean' },
        { name: 'reason', type: 'string' },
      ],
    },
  });
}

function completionWith(content: string): Handler {
  return (_req, res) => {
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
  };
}

/** A pino logger whose lines the test can read. */
function capture(): { logger: pino.Logger; lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, cb) {
      lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
      cb();
    },
  });
  return { logger: pino({ level: 'info' }, stream), lines };
}

describe('post-call analysis', () => {
  it('sends one non-streamed request with the transcript and reads summary, sentiment and custom fields', async () => {
    server = await startServer(
      completionWith(
        '```json\n{"summary":"The user wants to cancel.","user_sentiment":"Negative","custom_analysis_data":[{"name":"wants_cancel","value":true},{"name":"reason","value":5}]}\n```',
      ),
    );
    const { logger } = capture();
    const analysis = await analyzeCall({
      agent: agentAt(server.url),
      transcript,
      metadata,
      logger,
      client: { dispatcher: testDispatcher },
    });
    expect(analysis).toEqual({
      summary: 'The user wants to cancel.',
      user_sentiment: 'negative',
      custom_analysis_data: [
        { name: 'wants_cancel', value: true },
        { name: 'reason', value: null },
      ],
    });
    expect(server.requests).toHaveLength(1);
    const body = JSON.parse(server.requests[0]?.body ?? '') as {
      stream: boolean;
      messages: { content: string }[];
      metadata: unknown;
    };
    expect(body.stream).toBe(false);
    expect(body.metadata).toEqual(metadata);
    expect(body.messages[0]?.content.startsWith(ANALYSIS_REQUEST_TAG)).toBe(true);
    expect(body.messages[1]?.content).toBe('Transcript:\nagent: Hello, how can I help?\nuser: I want to cancel.');
    expect(server.requests[0]?.headers.authorization).toBe('Bearer k');
  });

  it('falls back to unknown sentiment and an empty summary, logging why, when the model fails', async () => {
    server = await startServer((_req, res) => {
      res.writeHead(500);
      res.end('boom');
    });
    const { logger, lines } = capture();
    const analysis = await analyzeCall({
      agent: agentAt(server.url),
      transcript,
      metadata,
      logger,
      client: { dispatcher: testDispatcher, maxRetries: 0 },
    });
    expect(analysis).toEqual({
      summary: '',
      user_sentiment: 'unknown',
      custom_analysis_data: [
        { name: 'wants_cancel', value: null },
        { name: 'reason', value: null },
      ],
    });
    expect(lines[0]).toMatchObject({
      level: 40,
      code: 'LLM_HTTP_STATUS',
      call_id: 'c7',
      msg: 'call analysis fell back to unknown',
    });
  });

  it('falls back when the reply holds no JSON, and logs that reason', async () => {
    server = await startServer(completionWith('I cannot do that.'));
    const { logger, lines } = capture();
    const analysis = await analyzeCall({
      agent: agentAt(server.url),
      transcript,
      metadata,
      logger,
      client: { dispatcher: testDispatcher },
    });
    expect(analysis.user_sentiment).toBe('unknown');
    expect(lines[0]).toMatchObject({ reason: 'reply holds no JSON object' });
  });

  it('maps a sentiment outside the four values to unknown', () => {
    const agent = agentAt('http://127.0.0.1:9');
    expect(parseAnalysisReply('{"summary":"s","user_sentiment":"ecstatic"}', agent)).toMatchObject({
      user_sentiment: 'unknown',
      summary: 's',
    });
  });

  it("moves to the agent's next text model when one fails, and skips speech-to-speech models, which read no chat request", async () => {
    server = await startServer((_req, res) => {
      res.writeHead(503);
      res.end('down');
    });
    const backup = await startServer(completionWith('{"summary":"Cancel.","user_sentiment":"Neutral"}'));
    try {
      const agent = AgentConfigSchema.parse({
        agent_name: 'a',
        llm: {
          base_url: server.url,
          model: 'primary',
          fallback: [
            { engine: 'openai-realtime', base_url: 'ws://127.0.0.1:9/v1/realtime', model: 'rt' },
            { base_url: backup.url, model: 'backup', api_key: 'k2' },
          ],
        },
      });
      const { logger, lines } = capture();
      const analysis = await analyzeCall({
        agent,
        transcript,
        metadata,
        logger,
        client: { dispatcher: testDispatcher, maxRetries: 0 },
      });
      expect(analysis).toMatchObject({ summary: 'Cancel.', user_sentiment: 'neutral' });
      expect(server.requests).toHaveLength(1);
      expect(backup.requests).toHaveLength(1);
      expect(backup.requests[0]?.headers.authorization).toBe('Bearer k2');
      expect(lines[0]).toMatchObject({
        msg: 'call analysis moves to the next model',
        model: 'primary',
        next: 'backup',
      });
    } finally {
      await backup.close();
    }
  });

  it('is skipped, saying why, for an agent whose only models are speech-to-speech', async () => {
    const agent = AgentConfigSchema.parse({
      agent_name: 'a',
      llm: { engine: 'openai-realtime', base_url: 'ws://127.0.0.1:9/v1/realtime', model: 'rt' },
    });
    const { logger, lines } = capture();
    const analysis = await analyzeCall({ agent, transcript, metadata, logger, client: { dispatcher: testDispatcher } });
    expect(analysis).toEqual({ summary: '', user_sentiment: 'unknown', custom_analysis_data: [] });
    expect(lines[0]).toMatchObject({
      msg: 'call analysis skipped',
      reason: expect.stringMatching(/no chat-completions model/),
    });
  });
});
