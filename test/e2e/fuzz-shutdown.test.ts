// Property-based fuzz of the service process around a stop (the "Safe to expose" issue): bursts
// of short Twilio media streams with random frames, then SIGTERM at a random moment. Whatever the
// callers did, the process must exit on its own with code 0 - never abort. Runs the real service
// as a child process (as test/e2e/restart.test.ts does), since an abort would take the test with it.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { twilioSignature } from '../../src/carriers/twilio/signature.ts';
import { FUZZ_SEED, runs } from '../helpers/fuzz.ts';
import { freePort } from '../helpers/net.ts';
import { KEYS, TEST_TWILIO_TOKEN } from '../helpers/service.ts';
import { untilHealthy } from '../helpers/service-process.ts';

const root = join(import.meta.dirname, '..', '..');
const NUMBER = '+15550190009';
const children: ChildProcess[] = [];
const dirs: string[] = [];
afterEach(() => {
  for (const child of children.splice(0)) child.kill('SIGKILL');
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

interface Running {
  url: string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  stderr: () => string;
  child: ChildProcess;
}

async function startProcess(): Promise<Running> {
  const dataDir = mkdtempSync(join(tmpdir(), 'voicecall-fuzz-stop-'));
  dirs.push(dataDir);
  const port = await freePort();
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    cwd: root,
    env: {
      ...process.env,
      HOST: '127.0.0.1',
      PORT: String(port),
      DATA_DIR: dataDir,
      API_KEYS: `acme:${KEYS.acme},globex:${KEYS.globex}`,
      TWILIO_AUTH_TOKEN: TEST_TWILIO_TOKEN,
      SHUTDOWN_DRAIN_MS: '300',
      LOG_LEVEL: 'warn',
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  children.push(child);
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('exit', (code, signal) => resolve({ code, signal })),
  );
  const url = `http://127.0.0.1:${port}`;
  await untilHealthy(url, child, () => stderr);
  return { url, exited, stderr: () => stderr, child };
}

/** One inbound call as Twilio places it: the signed voice webhook, then the stream with its parameters. */
async function shortCall(url: string, frames: string[], holdMs: number): Promise<void> {
  const hook = `${url}/telephony/twilio/voice`;
  const params = {
    CallSid: `CA${randomBytes(16).toString('hex')}`,
    From: '+14155550100',
    To: NUMBER,
    AccountSid: `AC${'0'.repeat(32)}`,
  };
  const res = await fetch(hook, {
    method: 'POST',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      'x-twilio-signature': twilioSignature(TEST_TWILIO_TOKEN, hook, params),
    },
    body: new URLSearchParams(params).toString(),
  });
  const twiml = await res.text();
  const param = (name: string) => new RegExp(`<Parameter name="${name}" value="([^"]+)"/>`).exec(twiml)?.[1] ?? '';
  const ws = new WebSocket(`${url.replace(/^http/, 'ws')}/media/twilio`);
  ws.on('error', () => undefined);
  await new Promise((resolve) => {
    ws.once('open', resolve);
    ws.once('error', resolve);
  });
  if (ws.readyState !== WebSocket.OPEN) return;
  const streamSid = `MZ${randomBytes(16).toString('hex')}`;
  ws.send(JSON.stringify({ event: 'connected', protocol: 'Call', version: '1.0.0' }));
  ws.send(
    JSON.stringify({
      event: 'start',
      streamSid,
      start: {
        streamSid,
        callSid: params.CallSid,
        customParameters: { call_id: param('call_id'), secret: param('secret') },
      },
    }),
  );
  for (const frame of frames) if (ws.readyState === WebSocket.OPEN) ws.send(frame);
  await new Promise((resolve) => setTimeout(resolve, holdMs));
  if (ws.readyState === WebSocket.OPEN) ws.send('{"event":"stop"}');
  ws.close();
}

const frameArb = fc.oneof(
  fc
    .base64String({ maxLength: 400 })
    .map((payload) => JSON.stringify({ event: 'media', media: { track: 'inbound', payload } })),
  fc
    .uint8Array({ maxLength: 320 })
    .map((b) => JSON.stringify({ event: 'media', media: { payload: Buffer.from(b).toString('base64') } })),
  fc.constantFrom(
    '{"event":"mark","mark":{"name":"x"}}',
    '{"event":"dtmf","dtmf":{"digit":"5"}}',
    'not json',
    '{"event":"stop"}',
  ),
);

describe('fuzz of a stop under short calls (the service as a process)', () => {
  it('SIGTERM at any moment after a burst of short media streams with random frames ends the process with exit code 0, never a native abort', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.record({
          calls: fc.array(
            fc.record({ frames: fc.array(frameArb, { maxLength: 4 }), holdMs: fc.integer({ min: 0, max: 150 }) }),
            { minLength: 15, maxLength: 30 },
          ),
          sigtermAfterMs: fc.integer({ min: 0, max: 1_000 }),
        }),
        async ({ calls, sigtermAfterMs }) => {
          const service = await startProcess();
          const agent = await fetch(`${service.url}/v2/agents/demo`, {
            headers: { authorization: `Bearer ${KEYS.acme}` },
          }).then((r) => r.json() as Promise<Record<string, unknown>>);
          const { agent_id: _id, version: _v, is_published: _p, last_modified: _m, ...config } = agent;
          // The embedded pocketsphinx recogniser: it decodes in worker threads the stop must end.
          const created = await fetch(`${service.url}/v2/agents`, {
            method: 'POST',
            headers: { authorization: `Bearer ${KEYS.acme}`, 'content-type': 'application/json' },
            body: JSON.stringify({
              ...config,
              agent_id: 'stop-fuzz',
              begin_message: '',
              stt: { engine: 'pocketsphinx', language: 'en-US' },
              inbound_numbers: [NUMBER],
            }),
          });
          expect(created.status).toBe(201);
          for (const call of calls) await shortCall(service.url, call.frames, call.holdMs);
          await new Promise((resolve) => setTimeout(resolve, sigtermAfterMs));
          service.child.kill('SIGTERM');
          const exit = await Promise.race([
            service.exited,
            new Promise<'hung'>((resolve) => setTimeout(() => resolve('hung'), 15_000)),
          ]);
          const lines = service
            .stderr()
            .split('\n')
            .filter((line) => line.trim() !== '' && !line.startsWith('{'));
          const fatal = lines.findIndex((line) => line.includes('FATAL'));
          const tail = (fatal >= 0 ? lines.slice(fatal, fatal + 16) : lines.slice(-16)).join('\n');
          expect(exit, `the process after SIGTERM; its stderr ends:\n${tail}`).toEqual({ code: 0, signal: null });
        },
      ),
      { numRuns: runs(2), seed: FUZZ_SEED, endOnFailure: true },
    );
  }, 150_000); // two runs, each start allowed 60 s on a loaded machine (untilHealthy; one took over 15 s)
});
