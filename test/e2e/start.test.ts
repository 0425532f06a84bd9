// Starts the service the way `npm start` does (after set-up) and checks what a new user sees.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { freePort } from '../helpers/net.ts';

const root = join(import.meta.dirname, '..', '..');
const running: ChildProcess[] = [];
afterEach(() => {
  for (const child of running.splice(0)) child.kill('SIGKILL');
});

function start(dataDir: string, port: number): Promise<{ child: ChildProcess; url: string; stdout: () => string }> {
  const env: Record<string, string> = {
    ...(process.env as Record<string, string>),
    DATA_DIR: dataDir,
    PORT: String(port),
    LOG_LEVEL: 'info',
  };
  delete env.API_KEYS;
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    cwd: root,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  running.push(child);
  let out = '';
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no ready line within 20 s:\n${out}`)), 20_000);
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const ready = /"url":"(http:\/\/[^"]+)"[^\n]*"msg":"voice-call runtime ready"/.exec(out);
      if (ready) {
        clearTimeout(timer);
        resolve({ child, url: ready[1]!, stdout: () => out });
      }
    });
    child.on('exit', (code) => reject(new Error(`exited ${code}:\n${out}`)));
  });
}

function exitCode(child: ChildProcess): Promise<number | null> {
  return new Promise((resolve) => child.on('exit', (code) => resolve(code)));
}

describe('npm start', () => {
  it('serves the API with the demo agent, prints a generated key once, and stops cleanly on SIGTERM', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'voicecall-start-'));
    // A fixed port: the demo agent's URLs derive from it, so a restart sees the same agent.
    const port = await freePort();
    const first = await start(dataDir, port);
    const key = /Bearer <key>/.test(first.stdout()) ? /\n {4}(vk_[0-9a-f]+)\n/.exec(first.stdout())?.[1] : undefined;
    expect(key).toBeDefined();
    expect((await fetch(`${first.url}/healthz`)).status).toBe(200);
    const agents = await fetch(`${first.url}/v2/agents/demo`, { headers: { authorization: `Bearer ${key}` } });
    expect(agents.status).toBe(200);
    expect(((await agents.json()) as { agent_name: string }).agent_name).toMatch(/demo/i);
    const stopped = exitCode(first.child);
    first.child.kill('SIGTERM');
    expect(await stopped).toBe(0);

    const second = await start(dataDir, port);
    expect(second.stdout()).not.toContain(key!);
    const again = await fetch(`${second.url}/v2/agents/demo`, { headers: { authorization: `Bearer ${key}` } });
    expect(((await again.json()) as { version: number }).version).toBe(1);
    second.child.kill('SIGTERM');
    expect(await exitCode(second.child)).toBe(0);
  }, 60_000);

  it('exits with a clear message on bad configuration', async () => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
      cwd: root,
      env: { ...process.env, PORT: 'not-a-port', DATA_DIR: mkdtempSync(join(tmpdir(), 'voicecall-bad-')) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    running.push(child);
    let err = '';
    child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
    expect(await exitCode(child)).toBe(2);
    expect(err).toMatch(/PORT/);
  }, 30_000);
});
