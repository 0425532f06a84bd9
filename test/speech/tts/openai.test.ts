import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { int16ToBuffer } from '../../../src/audio/pcm.ts';
import { encodeWav } from '../../../src/audio/wav.ts';
import { OpenAiTtsEngine } from '../../../src/speech/tts/openai.ts';
import { amplitudeAt, db, tone } from '../../audio/signals.ts';
import { collect, durationOf, joined } from './collect.ts';
import { testDispatcher } from '../../support/outbound.ts';

type Handler = (req: IncomingMessage, res: ServerResponse, body: string) => void;
let handler: Handler = (_req, res) => res.end();
let baseUrl = '';
const server = createServer((req, res) => {
  let body = '';
  req.on('data', (d: Buffer) => (body += d.toString()));
  req.on('end', () => handler(req, res, body));
});
beforeAll(async () => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
});
afterAll(() => {
  server.closeAllConnections();
  return new Promise<void>((resolve) => server.close(() => resolve()));
});

const speech24k = int16ToBuffer(tone(440, 24000, 0.5));

describe('OpenAI-compatible speech endpoint', () => {
  it('posts model, input, voice, response_format and speed with the bearer key, and resamples the 24 kHz PCM body', async () => {
    let seen: { url?: string; auth?: string; body?: unknown } = {};
    handler = (req, res, body) => {
      seen = { url: req.url, auth: req.headers.authorization, body: JSON.parse(body) };
      res.writeHead(200, { 'content-type': 'audio/pcm' });
      // Odd-sized pieces: samples are split across reads.
      for (let i = 0; i < speech24k.length; i += 1001) res.write(speech24k.subarray(i, i + 1001));
      res.end();
    };
    const engine = new OpenAiTtsEngine(
      { baseUrl, apiKey: 'sk-test', model: 'tts-1', voice: 'nova', speed: 1.25 },
      testDispatcher,
    );
    const chunks = await collect(engine.synthesize('Hello there.', { sampleRate: 16000 }));
    expect(seen).toEqual({
      url: '/v1/audio/speech',
      auth: 'Bearer sk-test',
      body: { model: 'tts-1', input: 'Hello there.', voice: 'nova', response_format: 'pcm', speed: 1.25 },
    });
    expect(chunks.every((c) => c.samples.length === 320 && c.sampleRate === 16000)).toBe(true);
    expect(durationOf(chunks)).toBeCloseTo(0.5, 1);
    expect(Math.abs(db(amplitudeAt(joined(chunks).subarray(800, 7200), 440, 16000) / 10000))).toBeLessThan(1);
  });

  it('streams: the first audio arrives while the server is still sending', async () => {
    let release: () => void = () => undefined;
    const released = new Promise<void>((resolve) => (release = resolve));
    handler = (_req, res) => {
      res.writeHead(200);
      res.write(speech24k.subarray(0, 9600));
      void released.then(() => res.end(speech24k.subarray(9600)));
    };
    const iterator = new OpenAiTtsEngine({ baseUrl }, testDispatcher)
      .synthesize('Hi.', { sampleRate: 16000 })
      [Symbol.asyncIterator]();
    expect((await iterator.next()).done).toBe(false);
    release();
    let more = 0;
    while (!(await iterator.next()).done) more++;
    expect(more).toBeGreaterThan(10);
  });

  it('reads a WAV body with its own rate (response_format wav)', async () => {
    let format: unknown;
    handler = (_req, res, body) => {
      format = (JSON.parse(body) as { response_format: unknown }).response_format;
      res.end(encodeWav({ samples: tone(440, 22050, 0.4), sampleRate: 22050 }));
    };
    const chunks = await collect(
      new OpenAiTtsEngine({ baseUrl, responseFormat: 'wav' }, testDispatcher).synthesize('Hi.', { sampleRate: 8000 }),
    );
    expect(format).toBe('wav');
    expect(durationOf(chunks)).toBeCloseTo(0.4, 1);
    expect(chunks[0]?.samples.length).toBe(160);
  });

  it('turns an error status into TTS_HTTP_ERROR with the server message', async () => {
    handler = (_req, res) => {
      res.writeHead(401, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: 'Incorrect API key provided' } }));
    };
    await expect(
      collect(new OpenAiTtsEngine({ baseUrl }, testDispatcher).synthesize('Hi.', { sampleRate: 16000 })),
    ).rejects.toMatchObject({
      code: 'TTS_HTTP_ERROR',
      message: expect.stringContaining('Incorrect API key provided') as string,
    });
  });

  it('stops within one frame of a cancel and closes the connection', async () => {
    let closed: () => void = () => undefined;
    const connectionClosed = new Promise<void>((resolve) => (closed = resolve));
    handler = (_req, res) => {
      res.writeHead(200);
      const timer = setInterval(() => res.write(speech24k.subarray(0, 4800)), 10);
      res.on('close', () => {
        clearInterval(timer);
        closed();
      });
    };
    const controller = new AbortController();
    const iterator = new OpenAiTtsEngine({ baseUrl }, testDispatcher)
      .synthesize('Hi.', { sampleRate: 16000, signal: controller.signal })
      [Symbol.asyncIterator]();
    expect((await iterator.next()).done).toBe(false);
    controller.abort();
    expect(await iterator.next()).toEqual({ done: true, value: undefined });
    await connectionClosed;
  });

  it('gives up a piece whose server sends more audio than the cap with TTS_BAD_RESPONSE, and closes the connection', async () => {
    let closed: () => void = () => undefined;
    const connectionClosed = new Promise<void>((resolve) => (closed = resolve));
    handler = (_req, res) => {
      res.writeHead(200);
      // Endless audio for one short piece of text.
      const timer = setInterval(() => res.write(speech24k), 1);
      res.on('close', () => {
        clearInterval(timer);
        closed();
      });
    };
    const chunks: unknown[] = [];
    const engine = new OpenAiTtsEngine({ baseUrl, maxPieceSeconds: 3 }, testDispatcher);
    await expect(
      (async () => {
        for await (const chunk of engine.synthesize('Hi.', { sampleRate: 16000 })) chunks.push(chunk);
      })(),
    ).rejects.toMatchObject({ code: 'TTS_BAD_RESPONSE', message: expect.stringContaining('3 s of audio') as string });
    expect(chunks.length * 0.02).toBeLessThanOrEqual(3);
    await connectionClosed;
  });

  it('gives up a server that stops sending, before its answer or mid-body, with TTS_BAD_RESPONSE', async () => {
    handler = () => undefined;
    await expect(
      collect(
        new OpenAiTtsEngine({ baseUrl, stallTimeoutMs: 200 }, testDispatcher).synthesize('Hi.', { sampleRate: 16000 }),
      ),
    ).rejects.toMatchObject({
      code: 'TTS_BAD_RESPONSE',
      message: expect.stringContaining('nothing for 200 ms') as string,
    });
    handler = (_req, res) => {
      res.writeHead(200);
      res.write(speech24k.subarray(0, 4800));
    };
    await expect(
      collect(
        new OpenAiTtsEngine({ baseUrl, stallTimeoutMs: 200 }, testDispatcher).synthesize('Hi.', { sampleRate: 16000 }),
      ),
    ).rejects.toMatchObject({ code: 'TTS_BAD_RESPONSE' });
  });

  it('rejects a config without a valid base URL with TTS_CONFIG_INVALID', () => {
    expect(() => new OpenAiTtsEngine({ baseUrl: 'ftp://x' }, testDispatcher)).toThrow(
      expect.objectContaining({ code: 'TTS_CONFIG_INVALID' }) as Error,
    );
  });

  it('reports an unreachable endpoint as TTS_HTTP_ERROR', async () => {
    const engine = new OpenAiTtsEngine({ baseUrl: 'http://127.0.0.1:9/v1' }, testDispatcher);
    await expect(collect(engine.synthesize('Hi.', { sampleRate: 16000 }))).rejects.toMatchObject({
      code: 'TTS_HTTP_ERROR',
    });
  });
});
