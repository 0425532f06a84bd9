// Live control of a phone call through the API, end to end: a real Twilio media stream, the
// embedded engines, a model server that shows what it was sent; then the record's own changes.
import { existsSync } from 'node:fs';
import WebSocket from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CallRecordSchema, type CallRecord } from '../../src/records/record.ts';
import type { ChatMessage } from '../../src/llm/types.ts';
import { agentFinished, fixtureUlaw, placeInboundCall } from '../helpers/phone.ts';
import { errorOf, startTestService, type TestService } from '../helpers/service.ts';
import { replyStream, sseHeaders, startServer, type TestServer } from '../support/http-server.ts';

const NUMBER = '+15550800001';
const NOTE = 'The customer’s order 4471 shipped this morning.';
const ANNOUNCEMENT =
  'Here is a very long announcement about our opening hours, our holidays and every one of our twelve branches across the county.';
let t: TestService;
let model: TestServer;

beforeAll(async () => {
  // The model answers from what it was sent: the note, once it is in the messages, is what it says.
  model = await startServer((_req, res, body) => {
    const messages = (JSON.parse(body) as { messages: ChatMessage[] }).messages;
    const noted = messages.some((m) => m.role === 'system' && m.content === NOTE);
    sseHeaders(res);
    res.end(replyStream(noted ? 'Good news, your order has shipped.' : 'Let me check that for you.'));
  });
  t = await startTestService({}, { recogniserLoaded: true });
  const res = await t.request('POST', '/v2/agents', {
    body: {
      agent_id: 'desk',
      agent_name: 'Desk',
      begin_message: 'Hello, order desk.',
      inbound_numbers: [NUMBER],
      llm: { base_url: `${model.url}/v1`, model: 'm' },
    },
  });
  expect(res.status, res.text).toBe(201);
}, 60_000);
afterAll(async () => {
  await t?.stop();
  await model?.close();
});

async function record(callId: string, until: (r: CallRecord) => boolean): Promise<CallRecord> {
  for (let i = 0; i < 200; i++) {
    const r = CallRecordSchema.parse((await t.request('GET', `/v2/calls/${callId}`)).body);
    if (until(r)) return r;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error('the record never reached the expected state');
}

describe('live call control', () => {
  it('say speaks a line that is an agent message of the transcript; context reaches the model from its next turn; end ends as agent_hangup', async () => {
    const { caller, callId } = await placeInboundCall(t.url, NUMBER);
    await agentFinished(caller, { after: 0, timeoutMs: 20_000 });

    let before = caller.played.length;
    const said = await t.request('POST', `/v2/calls/${callId}/say`, {
      body: { text: 'Please hold the line for a moment.' },
    });
    expect(said.status, said.text).toBe(202);
    expect(said.body).toEqual({ call_id: callId, accepted: 'say' });
    await agentFinished(caller, { after: before, timeoutMs: 20_000 });

    expect((await t.request('POST', `/v2/calls/${callId}/context`, { body: { content: NOTE } })).status).toBe(202);
    before = caller.played.length;
    await caller.speak(fixtureUlaw('09-i-want-to-cancel'));
    await agentFinished(caller, { after: before, timeoutMs: 20_000 });
    const sent = JSON.parse(model.requests.at(-1)!.body) as { messages: ChatMessage[] };
    expect(sent.messages.filter((m) => m.role === 'system').map((m) => m.content)).toContain(NOTE);

    const ended = await t.request('POST', `/v2/calls/${callId}/end`);
    expect(ended.status).toBe(202);
    const final = await record(callId, (r) => r.call_status === 'ended');
    expect(final).toMatchObject({
      disconnection_reason: 'agent_hangup',
      disconnection_message: 'The call was ended through the API.',
    });
    const agentLines = final.transcript!.filter((m) => m.role === 'agent').map((m) => m.content);
    expect(agentLines).toContain('Please hold the line for a moment.');
    expect(agentLines).toContain('Good news, your order has shipped.');

    // Over, the call takes no more control.
    for (const action of ['end', 'say', 'context']) {
      const body = action === 'say' ? { text: 'Hi' } : action === 'context' ? { content: 'x' } : undefined;
      const late = await t.request('POST', `/v2/calls/${callId}/${action}`, body ? { body } : {});
      expect(late.status, action).toBe(409);
      expect(errorOf(late).code).toBe('CONFLICT');
    }
  }, 90_000);

  it('say with interrupt cuts what the agent is saying and speaks at once', async () => {
    const { caller, callId } = await placeInboundCall(t.url, NUMBER);
    await agentFinished(caller, { after: 0, timeoutMs: 20_000 });
    const greeted = caller.played.length;
    await t.request('POST', `/v2/calls/${callId}/say`, { body: { text: ANNOUNCEMENT } });
    // 600 ms of the announcement played (frames of 20 ms), however long the machine took to start it.
    for (const until = Date.now() + 20_000; caller.played.length < greeted + 30;) {
      if (Date.now() > until) throw new Error('the announcement did not play');
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(
      (await t.request('POST', `/v2/calls/${callId}/say`, { body: { text: 'Sorry, one moment.', interrupt: true } }))
        .status,
    ).toBe(202);
    const before = caller.played.length;
    await agentFinished(caller, { after: before, timeoutMs: 20_000 });
    await caller.hangUp();
    const final = await record(callId, (r) => r.call_status === 'ended');
    const agentLines = final.transcript!.filter((m) => m.role === 'agent').map((m) => m.content);
    expect(agentLines.at(-1)).toBe('Sorry, one moment.');
    // The announcement was cut: it keeps only the words that were heard before the interruption.
    const cut = agentLines.find((line) => line.startsWith('Here is'));
    expect(cut).toBeDefined();
    expect(cut!.length).toBeLessThan(ANNOUNCEMENT.length);
  }, 90_000);

  it("another organization's call is 404, and a bad body is 400 naming the field", async () => {
    const { caller, callId } = await placeInboundCall(t.url, NUMBER);
    await agentFinished(caller, { after: 0, timeoutMs: 20_000 });
    const other = await t.request('POST', `/v2/calls/${callId}/end`, { key: t.keyOf('globex') });
    expect(other.status).toBe(404);
    const bad = await t.request('POST', `/v2/calls/${callId}/say`, { body: { text: '' } });
    expect(bad.status).toBe(400);
    expect(errorOf(bad).details).toContain('text');
    expect((await t.request('DELETE', `/v2/calls/${callId}`)).status).toBe(409);
    await caller.hangUp();
    await record(callId, (r) => r.call_status === 'ended');
  }, 60_000);

  it('PATCH replaces metadata; DELETE removes the record and its recording once the call is over', async () => {
    const { caller, callId } = await placeInboundCall(t.url, NUMBER);
    await agentFinished(caller, { after: 0, timeoutMs: 20_000 });
    await caller.hangUp();
    const final = await record(callId, (r) => r.call_status === 'ended' && r.recording_url !== null);

    const patched = await t.request('PATCH', `/v2/calls/${callId}`, { body: { metadata: { crm: 'case-9' } } });
    expect(patched.status).toBe(200);
    expect(CallRecordSchema.parse(patched.body).metadata).toEqual({ crm: 'case-9' });
    expect(
      (await t.request('PATCH', `/v2/calls/${callId}`, { body: { metadata: { crm: 1 } }, key: t.keyOf('globex') }))
        .status,
    ).toBe(404);

    const path = t.service.manager.recordingPath(callId);
    expect(existsSync(path)).toBe(true);
    expect((await t.request('DELETE', `/v2/calls/${callId}`, { key: t.keyOf('globex') })).status).toBe(404);
    const deleted = await t.request('DELETE', `/v2/calls/${callId}`);
    expect(deleted.status).toBe(204);
    expect(deleted.text).toBe('');
    expect(existsSync(path)).toBe(false);
    expect((await t.request('GET', `/v2/calls/${callId}`)).status).toBe(404);
    expect((await t.request('GET', `/v2/calls/${callId}/recording`)).status).toBe(404);
    expect((await t.request('DELETE', `/v2/calls/${callId}`)).status).toBe(404);
    expect(final.call_id).toBe(callId);
  }, 60_000);

  it('listen streams a live call: its transcript events as JSON and both parties mixed as 16 kHz PCM16, until the call ends', async () => {
    const { caller, callId } = await placeInboundCall(t.url, NUMBER);
    const url = `${t.url.replace('http', 'ws')}/v2/calls/${callId}/listen`;
    const refused = new WebSocket(url, { headers: { authorization: `Bearer ${t.keyOf('globex')}` } });
    const refusedClose = await new Promise<number>((resolve) => refused.on('close', (code) => resolve(code)));
    expect(refusedClose).toBe(1008);

    const listener = new WebSocket(url, { headers: { authorization: `Bearer ${t.keyOf('acme')}` } });
    const texts: { type: string; role?: string; text?: string; final?: boolean }[] = [];
    const audio: Buffer[] = [];
    listener.on('message', (data: Buffer, isBinary: boolean) =>
      isBinary ? audio.push(data) : texts.push(JSON.parse(data.toString()) as (typeof texts)[number]),
    );
    const closed = new Promise<number>((resolve) => listener.on('close', (code) => resolve(code)));
    await new Promise((resolve) => listener.once('open', resolve));
    const framesAtOpen = caller.framesSent;

    await agentFinished(caller, { after: 0, timeoutMs: 20_000 });
    const before = caller.played.length;
    await caller.speak(fixtureUlaw('09-i-want-to-cancel'));
    await agentFinished(caller, { after: before, timeoutMs: 20_000 });
    await caller.hangUp();
    expect(await closed).toBe(1000);
    const listenedMs = (caller.framesSent - framesAtOpen) * 20;

    const user = texts.find((m) => m.type === 'transcript' && m.role === 'user' && m.final);
    expect(user?.text).toMatch(/cancel/i);
    expect(
      texts.some((m) => m.type === 'transcript' && m.role === 'agent' && m.text === 'Let me check that for you.'),
    ).toBe(true);
    expect(texts.at(-1)).toMatchObject({ type: 'call_ended', disconnection_reason: 'user_hangup' });
    // Audio all along, at 16 kHz: a mixed frame per caller frame, so the seconds received match the caller's seconds
    // sent while listening (counted in frames, not by the wall clock: a loaded machine sends them late, not fewer).
    const samples = audio.reduce((n, b) => n + b.length / 2, 0);
    expect(samples / 16000).toBeGreaterThan((listenedMs / 1000) * 0.8);
    expect(samples / 16000).toBeLessThan(listenedMs / 1000 + 1);
    // Sound, not silence: the greeting, the caller's words and the answer add up to well over 1.5 s.
    const pcm = new Int16Array(Buffer.concat(audio).buffer.slice(0));
    let loud = 0;
    for (let i = 0; i < pcm.length; i += 320) {
      let energy = 0;
      for (let j = i; j < Math.min(pcm.length, i + 320); j++) energy += pcm[j]! * pcm[j]!;
      if (Math.sqrt(energy / 320) > 500) loud++;
    }
    expect(loud * 0.02).toBeGreaterThan(1.5);
  }, 90_000);
});
