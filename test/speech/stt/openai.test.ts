import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SttConfigSchema } from '../../../src/agents/schema.ts';
import { createSttEngine } from '../../../src/speech/stt/index.ts';
import { OpenAiSttEngine } from '../../../src/speech/stt/openai/engine.ts';
import { testDispatcher } from '../../support/outbound.ts';

interface Seen {
  path: string;
  auth: string | undefined;
  contentType: string | undefined;
  fields: Map<string, string>;
  fileType: string;
  fileBytes: number;
}

let server: Server;
let baseUrl: string;
const seen: Seen[] = [];
let reply: { status: number; body: string } = { status: 200, body: '{"text":"hello world"}' };

async function parse(req: IncomingMessage): Promise<Seen> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  // The server reads the multipart body with the platform's own parser.
  const form = await new Request('http://x/', {
    method: 'POST',
    headers: { 'content-type': req.headers['content-type'] ?? '' },
    body: Buffer.concat(chunks),
  }).formData();
  const fields = new Map<string, string>();
  let fileType = '';
  let fileBytes = 0;
  for (const [k, v] of form.entries()) {
    if (typeof v === 'string') fields.set(k, v);
    else {
      fileType = v.type;
      const bytes = new Uint8Array(await v.arrayBuffer());
      fileBytes = bytes.length;
      fields.set(`${k}:riff`, Buffer.from(bytes.subarray(0, 4)).toString('latin1'));
    }
  }
  return {
    path: req.url ?? '',
    auth: req.headers.authorization,
    contentType: req.headers['content-type'],
    fields,
    fileType,
    fileBytes,
  };
}

beforeAll(async () => {
  server = createServer((req, res) => {
    void parse(req).then((s) => {
      seen.push(s);
      res.writeHead(reply.status, { 'content-type': 'application/json' });
      res.end(reply.body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
});

afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

const second = new Int16Array(16000).map((_, i) => Math.round(8000 * Math.sin(i / 5)));

describe('openai-compatible STT engine', () => {
  it('posts one multipart WAV with model and language per finalize, with the bearer key', async () => {
    seen.length = 0;
    reply = { status: 200, body: '{"text":" hello world "}' };
    const engine = new OpenAiSttEngine({
      dispatcher: testDispatcher,
      baseUrl,
      apiKey: 'sk-test',
      model: 'whisper-tiny',
    });
    const stream = await engine.open({ sampleRate: 16000, language: 'en-US' });
    stream.push(second.subarray(0, 8000));
    stream.push(second.subarray(8000));
    expect(await stream.finalize()).toEqual({ text: 'hello world' });
    await stream.close();
    expect(seen).toHaveLength(1);
    const s = seen[0];
    expect(s?.path).toBe('/v1/audio/transcriptions');
    expect(s?.auth).toBe('Bearer sk-test');
    expect(s?.contentType).toMatch(/^multipart\/form-data; boundary=/);
    expect(s?.fields.get('model')).toBe('whisper-tiny');
    expect(s?.fields.get('language')).toBe('en');
    expect(s?.fields.get('file:riff')).toBe('RIFF');
    expect(s?.fileType).toBe('audio/wav');
    expect(s?.fileBytes).toBe(44 + 32000);
  });

  it('word timings from the endpoint count from the start of the stream', async () => {
    reply = { status: 200, body: '{"text":"hi","words":[{"word":"hi","start":0.1,"end":0.4}]}' };
    const stream = await new OpenAiSttEngine({ dispatcher: testDispatcher, baseUrl }).open({
      sampleRate: 16000,
      language: 'en',
    });
    stream.push(second);
    await stream.finalize();
    stream.push(second);
    expect((await stream.finalize()).words).toEqual([{ word: 'hi', start: 1.1, end: 1.4 }]);
  });

  it('a non-2xx answer fails with STT_HTTP_STATUS and the status', async () => {
    reply = { status: 401, body: '{"error":"bad key"}' };
    const stream = await new OpenAiSttEngine({ dispatcher: testDispatcher, baseUrl }).open({
      sampleRate: 16000,
      language: 'en-US',
    });
    stream.push(second);
    await expect(stream.finalize()).rejects.toMatchObject({ code: 'STT_HTTP_STATUS', status: 401 });
  });

  it('a body without text fails with STT_BAD_RESPONSE', async () => {
    reply = { status: 200, body: '{"transcript":"nope"}' };
    const stream = await new OpenAiSttEngine({ dispatcher: testDispatcher, baseUrl }).open({
      sampleRate: 16000,
      language: 'en-US',
    });
    stream.push(second);
    await expect(stream.finalize()).rejects.toMatchObject({ code: 'STT_BAD_RESPONSE' });
  });

  it('an unreachable endpoint fails with STT_HTTP_FAILED', async () => {
    const stream = await new OpenAiSttEngine({
      dispatcher: testDispatcher,
      baseUrl: 'http://127.0.0.1:1/v1',
      timeoutMs: 2000,
    }).open({ sampleRate: 16000, language: 'en-US' });
    stream.push(second);
    await expect(stream.finalize()).rejects.toMatchObject({ code: 'STT_HTTP_FAILED' });
  });

  it('finalize with no audio sends nothing and resolves empty', async () => {
    seen.length = 0;
    const stream = await new OpenAiSttEngine({ dispatcher: testDispatcher, baseUrl }).open({
      sampleRate: 16000,
      language: 'en-US',
    });
    expect(await stream.finalize()).toEqual({ text: '' });
    expect(seen).toHaveLength(0);
  });
});

describe('createSttEngine', () => {
  it('picks the engine named by the agent stt config', () => {
    expect(createSttEngine(SttConfigSchema.parse({}), { dispatcher: testDispatcher }).name).toBe('moonshine');
    expect(createSttEngine(SttConfigSchema.parse({ phrases: ['billing'] }), { dispatcher: testDispatcher }).name).toBe(
      'moonshine',
    );
    expect(
      createSttEngine(SttConfigSchema.parse({ engine: 'pocketsphinx', phrases: ['billing'] }), {
        dispatcher: testDispatcher,
      }).name,
    ).toBe('pocketsphinx');
    expect(
      createSttEngine(SttConfigSchema.parse({ engine: 'openai', base_url: 'http://127.0.0.1:9/v1' }), {
        dispatcher: testDispatcher,
      }).name,
    ).toBe('openai');
  });

  it('refuses an openai config without base_url with STT_CONFIG_INVALID', () => {
    expect(() => createSttEngine(SttConfigSchema.parse({ engine: 'openai' }), { dispatcher: testDispatcher })).toThrow(
      expect.objectContaining({ code: 'STT_CONFIG_INVALID' }),
    );
  });
});
