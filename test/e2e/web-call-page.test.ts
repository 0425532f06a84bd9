// The web-call page in a real browser against a small fake of the /media/web protocol: the
// page's side of the wire (start token, 20 ms PCM16 frames up, marks, clear, hangup) and what
// a person sees (mic level, transcript, tool calls, latency, why the call ended).
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import type { Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { WebSocketServer, type WebSocket } from 'ws';
import { launchChromium, tone, writeWav, type TestBrowser } from '../helpers/browser.ts';
import { KEYS, startTestService, type TestService } from '../helpers/service.ts';

const root = join(import.meta.dirname, '..', '..');
const TOKEN = 'wct_test_token_123';

interface Received {
  at: number;
  text?: string;
  binary?: Buffer;
}

/** One fake call stream: records everything the page sends, with arrival times. */
class FakeCallSocket {
  readonly received: Received[] = [];
  constructor(readonly ws: WebSocket) {
    ws.on('message', (data: Buffer, isBinary) => {
      this.received.push(
        isBinary ? { at: Date.now(), binary: Buffer.from(data) } : { at: Date.now(), text: data.toString() },
      );
    });
  }
  json(): { at: number; msg: Record<string, unknown> }[] {
    return this.received
      .filter((r) => r.text !== undefined)
      .map((r) => ({ at: r.at, msg: JSON.parse(r.text!) as Record<string, unknown> }));
  }
  frames(since = 0): Received[] {
    return this.received.filter((r) => r.binary && r.at >= since);
  }
  send(msg: Record<string, unknown>): void {
    this.ws.send(JSON.stringify(msg));
  }
  /** Agent audio: `seconds` of tone as 640-byte frames, all at once. */
  sendAudio(seconds: number): void {
    const pcm = tone(330, seconds, 16000, 0.2);
    for (let i = 0; i + 320 <= pcm.length; i += 320) this.ws.send(Buffer.from(pcm.buffer, i * 2, 640));
  }
  async waitFor(what: string, test: (msg: Record<string, unknown>) => boolean, timeoutMs = 5000): Promise<number> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const hit = this.json().find((r) => test(r.msg));
      if (hit) return hit.at;
      if (Date.now() > deadline)
        throw new Error(`no ${what} within ${timeoutMs} ms; got ${JSON.stringify(this.json().map((r) => r.msg))}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  }
}

let service: TestService;
let browser: TestBrowser;
let wss: WebSocketServer;
let workDir: string;
const sockets: FakeCallSocket[] = [];
const waiting: ((s: FakeCallSocket) => void)[] = [];

beforeAll(async () => {
  workDir = mkdtempSync(join(tmpdir(), 'voicecall-web-'));
  const mic = join(workDir, 'mic.wav');
  writeWav(mic, tone(440, 5, 48000, 0.4), 48000);
  service = await startTestService();
  wss = new WebSocketServer({ host: '127.0.0.1', port: 0, path: '/media/web' });
  await new Promise<void>((resolve) => wss.once('listening', resolve));
  wss.on('connection', (ws) => {
    const socket = new FakeCallSocket(ws);
    sockets.push(socket);
    waiting.shift()?.(socket);
  });
  browser = await launchChromium(mic);
});

afterAll(async () => {
  await browser?.close();
  await new Promise((resolve) => wss?.close(resolve));
  await service?.stop();
  rmSync(workDir, { recursive: true, force: true });
});

const pages: Page[] = [];
afterEach(async () => {
  for (const page of pages.splice(0)) await page.close().catch(() => undefined);
});

function nextSocket(): Promise<FakeCallSocket> {
  return new Promise((resolve) => waiting.push(resolve));
}

/** Opens the page, enters the key, picks the demo agent; POST /v2/web-calls answers with the fake socket. */
async function openPage(): Promise<{ page: Page; webCalls: unknown[] }> {
  const page = await browser.context.newPage();
  pages.push(page);
  const webCalls: unknown[] = [];
  const { port } = wss.address() as AddressInfo;
  await page.route('**/v2/web-calls', async (route) => {
    webCalls.push({ body: route.request().postDataJSON() as unknown, auth: route.request().headers().authorization });
    await route.fulfill({
      status: 201,
      json: { call_id: 'call_fake_1', access_token: TOKEN, websocket_url: `ws://127.0.0.1:${port}/media/web` },
    });
  });
  await page.goto(`${service.url}/`);
  await page.fill('#api-key', KEYS.acme!);
  await page.click('#use-key');
  await page.waitForSelector('#agent option[value="demo"]', { state: 'attached' });
  await page.selectOption('#agent', 'demo');
  return { page, webCalls };
}

async function placeCall(page: Page): Promise<FakeCallSocket> {
  const socket = nextSocket();
  await page.click('#call');
  const s = await socket;
  await s.waitFor('start', (m) => m.type === 'start');
  s.send({ type: 'call_started', call_id: 'call_fake_1', agent_name: 'Demo front desk', sample_rate: 16000 });
  return s;
}

describe('web-call page against a fake call socket', () => {
  it('speaks the protocol: start token, 20 ms frames up, marks after playback, clear, transcript, latency, mute, keypad and hangup', async () => {
    const { page, webCalls } = await openPage();
    const s = await placeCall(page);

    // The call was created for the chosen agent with the key from the form.
    expect(webCalls).toEqual([{ body: { agent_id: 'demo' }, auth: `Bearer ${KEYS.acme}` }]);
    const first = s.json()[0]!.msg;
    expect(first).toEqual({ type: 'start', access_token: TOKEN });
    expect(s.received.findIndex((r) => r.text !== undefined)).toBe(0);

    // Microphone frames: 640 bytes each, about 50 a second.
    await page.waitForSelector('body[data-call-state="live"]');
    const t0 = Date.now();
    await new Promise((r) => setTimeout(r, 2000));
    const frames = s.frames(t0).filter((f) => f.at < t0 + 2000);
    expect(frames.every((f) => f.binary!.length === 640)).toBe(true);
    expect(frames.length).toBeGreaterThanOrEqual(80);
    expect(frames.length).toBeLessThanOrEqual(120);
    // The 440 Hz tone arrives as sound, not silence, and the level meter moved.
    const loud = frames.filter(
      (f) => Math.max(...new Int16Array(f.binary!.buffer, f.binary!.byteOffset, 320).map(Math.abs)) > 2000,
    );
    expect(loud.length).toBeGreaterThan(frames.length / 2);
    expect(Number(await page.getAttribute('#mic-level', 'data-peak'))).toBeGreaterThan(10);

    // Agent audio: a mark after 1 s of audio comes back once that second has played, not before.
    s.send({ type: 'agent_speaking' });
    const sentAt = Date.now();
    s.sendAudio(1);
    s.send({ type: 'mark', name: 'greeting-end' });
    await page.waitForSelector('#speaking:not([hidden])');
    const echoedAt = await s.waitFor('mark echo', (m) => m.type === 'mark' && m.name === 'greeting-end');
    expect(echoedAt - sentAt).toBeGreaterThanOrEqual(800);
    expect(echoedAt - sentAt).toBeLessThan(3000);
    s.send({ type: 'agent_stopped' });

    // Barge-in: clear drops 5 s of queued audio at once and echoes the pending mark.
    s.sendAudio(5);
    s.send({ type: 'mark', name: 'long-reply' });
    await new Promise((r) => setTimeout(r, 300));
    const clearedAt = Date.now();
    s.send({ type: 'clear' });
    const flushedAt = await s.waitFor('mark echo after clear', (m) => m.type === 'mark' && m.name === 'long-reply');
    expect(flushedAt - clearedAt).toBeLessThan(500);

    // Transcript as it happens: partial then final user text, agent text, a tool call, latency.
    s.send({ type: 'transcript', role: 'agent', text: 'Hello, may I have your name?', final: true, turn: 0 });
    s.send({ type: 'transcript', role: 'user', text: 'my name', final: false, turn: 1 });
    await page.waitForSelector('li.user.partial >> text=my name');
    s.send({ type: 'transcript', role: 'user', text: 'my name is Ann', final: true, turn: 1 });
    s.send({ type: 'transcript', role: 'agent', text: 'Nice to meet you, Ann.', final: true, turn: 1 });
    // The next spoken utterance of the same turn joins the same entry.
    s.send({ type: 'transcript', role: 'agent', text: 'Let me book that.', final: true, turn: 1 });
    s.send({ type: 'tool_call', name: 'book_appointment', arguments: '{"name":"Ann","time":"Monday 10am"}' });
    s.send({ type: 'tool_result', name: 'book_appointment', successful: true, content: '{"booked":true}' });
    s.send({ type: 'transcript', role: 'agent', text: 'You are booked for Monday at 10.', final: true, turn: 1 });
    s.send({ type: 'latency', turn: 1, e2e_ms: 812.4 });
    await page.waitForSelector('li.user:not(.partial) >> text=my name is Ann');
    await page.waitForSelector('li.agent >> text=You are booked for Monday at 10.');
    expect(await page.textContent('li.agent[data-turn="1"] .text')).toBe('Nice to meet you, Ann. Let me book that.');
    await page.waitForSelector('li.tool.ok >> text=book_appointment');
    await page.waitForSelector('#latency-summary >> text=last 812 ms');
    expect(await page.textContent('li.agent[data-turn="1"] .lat')).toBe('812 ms');
    expect(await page.locator('#transcript li').count()).toBe(5);

    mkdirSync(join(root, 'artifacts'), { recursive: true });
    await page.screenshot({ path: join(root, 'artifacts', 'web-call-page-fake.png'), fullPage: true });
    await page.setViewportSize({ width: 390, height: 844 });
    await page.screenshot({ path: join(root, 'artifacts', 'web-call-page-phone.png'), fullPage: true });
    // On a phone-sized screen nothing is cut off sideways and the call buttons stay visible.
    expect(await page.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(390);
    expect(await page.isVisible('#hangup')).toBe(true);
    await page.setViewportSize({ width: 1100, height: 760 });

    // Muted, frames keep coming, of silence.
    await page.click('#mute');
    expect(await page.getAttribute('#mute', 'aria-pressed')).toBe('true');
    await new Promise((r) => setTimeout(r, 200));
    const mutedFrom = Date.now();
    await new Promise((r) => setTimeout(r, 600));
    const muted = s.frames(mutedFrom);
    expect(muted.length).toBeGreaterThanOrEqual(20);
    expect(muted.every((f) => f.binary!.every((b) => b === 0))).toBe(true);
    await page.click('#mute');
    expect(await page.getAttribute('#mute', 'aria-pressed')).toBe('false');

    // The keypad sends keypad digits, from its buttons and from the keyboard.
    await page.click('#keypad button[data-key="4"]');
    await page.click('#keypad button[data-key="#"]');
    await page.keyboard.press('7');
    await s.waitFor('keypad digits', (m) => m.type === 'dtmf' && m.digit === '7');
    expect(
      s
        .json()
        .filter((r) => r.msg.type === 'dtmf')
        .map((r) => r.msg.digit),
    ).toEqual(['4', '#', '7']);

    // Hang up: the page asks, the service answers call_ended, the page says why.
    await page.click('#hangup');
    await s.waitFor('hangup', (m) => m.type === 'hangup');
    s.send({ type: 'call_ended', disconnection_reason: 'user_hangup' });
    await page.waitForSelector('#ended >> text=user_hangup');
    expect(await page.getAttribute('body', 'data-call-state')).toBe('ended');
    expect(await page.textContent('#ended')).toContain('You hung up');
    expect(await page.isEnabled('#call')).toBe(true);
  }, 60_000);

  it('says the connection was lost, and that the service may be restarting, when the socket drops mid-call', async () => {
    const { page } = await openPage();
    const s = await placeCall(page);
    await page.waitForSelector('body[data-call-state="live"]');
    // A restart: the socket drops and, for now, the service does not answer at all.
    await page.route('**/healthz', (route) => route.abort('connectionrefused'));
    s.ws.terminate();
    await page.waitForSelector('#ended >> text=connection to the service was lost');
    await page.waitForSelector('#notice >> text=it may be restarting');
    expect(await page.getAttribute('body', 'data-disconnection-reason')).toBe('connection_lost');
    expect(await page.isEnabled('#call')).toBe(true);
  }, 30_000);

  it('shows why the service refused the call stream (bad token) instead of a bare disconnect', async () => {
    const { page } = await openPage();
    const socket = nextSocket();
    await page.click('#call');
    const s = await socket;
    await s.waitFor('start', (m) => m.type === 'start');
    s.send({
      type: 'error',
      code: 'BAD_TOKEN',
      message: 'the first message must be start with a valid, unused access_token',
    });
    s.ws.close(1008, 'invalid access token');
    await page.waitForSelector('#ended >> text=refused the call');
    expect(await page.textContent('#ended')).toContain('BAD_TOKEN');
  }, 30_000);

  it('says the API key was refused and asks for it again', async () => {
    const page = await browser.context.newPage();
    pages.push(page);
    await page.goto(`${service.url}/`);
    await page.fill('#api-key', 'not-a-key');
    await page.click('#use-key');
    await page.waitForSelector('#notice >> text=API key was refused');
    expect(await page.isDisabled('#call')).toBe(true);
    expect(await page.evaluate('sessionStorage.getItem("voicecall.apiKey")')).toBeNull();
  }, 30_000);

  it('says the microphone was refused, and starts no call', async () => {
    const refusing = await launchChromium(join(workDir, 'mic.wav'), { allowMicrophone: false });
    try {
      const page = await refusing.context.newPage();
      let created = 0;
      await page.route('**/v2/web-calls', async (route) => {
        created++;
        await route.abort();
      });
      await page.goto(`${service.url}/`);
      await page.fill('#api-key', KEYS.acme!);
      await page.click('#use-key');
      await page.waitForSelector('#agent option[value="demo"]', { state: 'attached' });
      await page.click('#call');
      await page.waitForSelector('#notice >> text=microphone was refused');
      expect(created).toBe(0);
      expect(await page.isEnabled('#call')).toBe(true);
    } finally {
      await refusing.close();
    }
  }, 30_000);
});
