// A person's browser call, end to end: Debian's chromium opens the page of the real service
// (embedded speech engines, demo model), its fake microphone says "my name is john smith",
// the page hangs up, and the call record holds what was said, with timestamps.
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { CallRecordSchema, type CallRecord } from '../../src/records/record.ts';
import { launchChromium, writeWav, type TestBrowser } from '../helpers/browser.ts';
import { KEYS, startTestService, type TestService } from '../helpers/service.ts';

const root = join(import.meta.dirname, '..', '..');
const fixtures = join(root, 'media', 'fixtures');

/** The PCM16 samples of a 16 kHz mono fixture WAV (after its RIFF chunks). */
function readPcm16(file: string): Int16Array {
  const buf = readFileSync(file);
  let at = 12;
  while (at + 8 <= buf.length) {
    const id = buf.toString('ascii', at, at + 4);
    const size = buf.readUInt32LE(at + 4);
    if (id === 'fmt ') {
      expect(buf.readUInt16LE(at + 8 + 2), 'mono').toBe(1);
      expect(buf.readUInt32LE(at + 8 + 4), '16 kHz').toBe(16000);
    }
    if (id === 'data') return new Int16Array(buf.buffer.slice(buf.byteOffset + at + 8, buf.byteOffset + at + 8 + size));
    at += 8 + size + (size % 2);
  }
  throw new Error(`${file}: no data chunk`);
}

const Transcripts = z.array(z.object({ file: z.string(), text: z.string() }));
let service: TestService;
let browser: TestBrowser;
let workDir: string;
let phrase: string;

beforeAll(async () => {
  workDir = mkdtempSync(join(tmpdir(), 'voicecall-webreal-'));
  const name = '01-my-name-is-john-rms.16k.wav';
  phrase = Transcripts.parse(JSON.parse(readFileSync(join(fixtures, 'transcripts.json'), 'utf8'))).find(
    (t) => t.file === name,
  )!.text;
  const speech = readPcm16(join(fixtures, name));
  // Silence while the greeting plays, the caller's words, then silence long enough that
  // Chromium's looping of the file never repeats them within the test.
  const rate = 16000;
  const mic = new Int16Array(rate * 16 + speech.length + rate * 60);
  mic.set(speech, rate * 16);
  writeWav(join(workDir, 'mic.wav'), mic, rate);
  service = await startTestService();
  browser = await launchChromium(join(workDir, 'mic.wav'));
});

afterAll(async () => {
  await browser?.close();
  await service?.stop();
  rmSync(workDir, { recursive: true, force: true });
});

describe('web call against the real service', () => {
  it('records a web call with the greeting, the caller’s words and the reply, and ends it as user_hangup when the page hangs up', async () => {
    const page = await browser.context.newPage();
    try {
      await webCall(page);
    } catch (error) {
      mkdirSync(join(root, 'artifacts'), { recursive: true });
      await page
        .screenshot({ path: join(root, 'artifacts', 'web-call-real-failed.png'), fullPage: true })
        .catch(() => undefined);
      // The service's warnings and errors say why a call went wrong; the browser cannot.
      const problems = service.logs.filter((line) => /"level":(40|50|60)/.test(line)).slice(-20);
      throw new Error(`${(error as Error).message}\nservice warnings and errors:\n${problems.join('\n')}`, {
        cause: error,
      });
    }
  }, 90_000);
});

async function webCall(page: Page): Promise<void> {
  {
    await page.goto(`${service.url}/`);
    await page.fill('#api-key', KEYS.acme!);
    await page.click('#use-key');
    await page.waitForSelector('#agent option[value="demo"]', { state: 'attached' });
    await page.selectOption('#agent', 'demo');
    await page.click('#call');

    await page.waitForSelector('body[data-call-state="live"]', { timeout: 10_000 });
    // Chromium has WebCodecs Opus both ways and the service offers it: the call speaks Opus.
    expect(await page.getAttribute('body', 'data-codec')).toBe('opus');
    await page.waitForSelector('li.agent[data-turn="0"] >> text=May I have your name', { timeout: 20_000 });
    await page.waitForSelector('li.user:not(.partial) >> text=/john/i', { timeout: 20_000 });
    await page.waitForSelector('li.agent[data-turn="1"]', { timeout: 20_000 });
    await page.waitForSelector('#latency-summary >> text=/last \\d+ ms/', { timeout: 10_000 });
    const callId = (await page.textContent('#call-id'))!.trim();
    expect(callId).not.toBe('');

    mkdirSync(join(root, 'artifacts'), { recursive: true });
    await page.screenshot({ path: join(root, 'artifacts', 'web-call-real.png'), fullPage: true });

    await page.click('#hangup');
    await page.waitForSelector('#ended >> text=user_hangup', { timeout: 10_000 });

    let record: CallRecord | undefined;
    for (let i = 0; i < 100; i++) {
      const res = await service.request('GET', `/v2/calls/${callId}`);
      expect(res.status).toBe(200);
      record = CallRecordSchema.parse(res.body);
      if (record.call_status === 'ended') break;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(record!.call_type).toBe('web');
    expect(record!.call_status).toBe('ended');
    expect(record!.disconnection_reason).toBe('user_hangup');
    const transcript = record!.transcript ?? [];
    const greeting = transcript.find((m) => m.role === 'agent' && /may i have your name/i.test(m.content));
    const user = transcript.find((m) => m.role === 'user');
    expect(greeting, JSON.stringify(transcript)).toBeDefined();
    expect(user, JSON.stringify(transcript)).toBeDefined();
    // The recogniser heard the caller's name; the exact words are the engine's.
    expect(user!.content.toLowerCase()).toMatch(/john/);
    expect(phrase).toMatch(/john/);
    const reply = transcript.find((m) => m.role === 'agent' && m.start_at > user!.start_at);
    expect(reply, JSON.stringify(transcript)).toBeDefined();
    for (const m of [greeting!, user!, reply!]) {
      expect(m.start_at).toBeGreaterThanOrEqual(0);
      expect(m.end_at).toBeGreaterThanOrEqual(m.start_at);
    }
    expect(greeting!.start_at, JSON.stringify(transcript)).toBeLessThan(user!.start_at);
    process.stdout.write(
      `\n[browser e2e] latency ${JSON.stringify(record!.latency)} transcript ${JSON.stringify(transcript)}\n`,
    );
    await page.close();
  }
}
