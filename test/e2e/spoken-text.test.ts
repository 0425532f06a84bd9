// What the caller hears is said as a person would say it: on a real phone call the agent's voice
// server is asked for "twelve dollars and fifty cents", while the transcript keeps "$12.50".
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CallRecordSchema, type CallRecord } from '../../src/records/record.ts';
import { agentFinished, placeInboundCall } from '../helpers/phone.ts';
import { startTestService, type TestService } from '../helpers/service.ts';

const NUMBER = '+15550100041';
const GREETING =
  'Acme here. Your balance is $12.50, due 2026-12-01. Call +1 415 555 0100 or write to help@acme.example.';
let t: TestService;
let voiceServer: Server;
const asked: string[] = [];

beforeAll(async () => {
  // An OpenAI-compatible voice: records what it is asked to say, answers 300 ms of 24 kHz PCM.
  voiceServer = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      asked.push((JSON.parse(body) as { input: string }).input);
      const pcm = new Int16Array(7200).map((_, i) => Math.round(8000 * Math.sin((2 * Math.PI * 440 * i) / 24000)));
      res.writeHead(200, { 'content-type': 'audio/pcm' }).end(Buffer.from(pcm.buffer));
    });
  });
  await new Promise<void>((resolve) => voiceServer.listen(0, '127.0.0.1', resolve));
  t = await startTestService();
  const demo = (await t.request('GET', '/v2/agents/demo')).body as Record<string, unknown>;
  const { agent_id: _id, version: _v, is_published: _p, last_modified: _m, ...config } = demo;
  const voice = {
    engine: 'openai',
    base_url: `http://127.0.0.1:${(voiceServer.address() as AddressInfo).port}/v1`,
    voice_id: 'alloy',
    pronunciation: [{ word: 'Acme', replacement: 'ack me' }],
  };
  const created = await t.request('POST', '/v2/agents', {
    body: { ...config, agent_id: 'spoken', inbound_numbers: [NUMBER], begin_message: GREETING, voice },
  });
  expect(created.status).toBe(201);
}, 60_000);
afterAll(async () => {
  await t?.stop();
  voiceServer?.close();
});

describe('text for the voice on a phone call', () => {
  it('asks the voice for money, dates, phone numbers, e-mail and the agent’s pronunciations as words; the transcript keeps the text', async () => {
    const { caller, callId } = await placeInboundCall(t.url, NUMBER);
    await agentFinished(caller, { after: 0, timeoutMs: 20_000 });
    await caller.hangUp();
    let record: CallRecord | undefined;
    for (let i = 0; i < 100 && record?.call_status !== 'ended'; i++) {
      record = CallRecordSchema.parse((await t.request('GET', `/v2/calls/${callId}`)).body);
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(asked.join(' ')).toBe(
      'ack me here. Your balance is twelve dollars and fifty cents, due December first, twenty twenty-six. Call plus one, four one five, five five five, zero one zero zero or write to help at ack me dot example.',
    );
    expect(record!.transcript![0]).toMatchObject({ role: 'agent', content: GREETING });
  }, 60_000);
});
