// WORKERS=2 with the default STT_POOL=machine, as a real process: both service processes send their
// callers' audio to one Moonshine recogniser process that the primary starts, so the machine holds
// one set of recogniser threads and one copy of the model. A recogniser killed with SIGKILL is
// started again for the next call; SIGTERM to the primary takes it down with the workers.
import type { ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { CallRecordSchema } from '../../src/records/record.ts';
import { freePort } from '../helpers/net.ts';
import { agentFinished, fixtureUlaw, placeInboundCall, type PlacedCall } from '../helpers/phone.ts';
import {
  apiAs,
  callOwners,
  childProcessesOf,
  demoAgentsFile,
  startServiceProcess,
} from '../helpers/service-process.ts';

const KEY = 'machine-stt-key-0123456789-01234567';
const NUMBER = '+15550300011';
const children: ChildProcess[] = [];
afterEach(() => {
  for (const child of children.splice(0)) child.kill('SIGKILL');
});
const api = apiAs(KEY);

const recognisers = (primary: number) =>
  childProcessesOf(primary).filter((c) => c.cmdline.includes('recogniser-process'));
const workers = (primary: number) =>
  childProcessesOf(primary).filter((c) => c.env.some((e) => e.startsWith('NODE_ID=')));

/** A call that says its name once greeted and waits for the answer. */
async function sayName(url: string): Promise<PlacedCall> {
  const call = await placeInboundCall(url, NUMBER);
  await agentFinished(call.caller, { after: 0, timeoutMs: 30_000 });
  const before = call.caller.played.length;
  await call.caller.speak(fixtureUlaw('01-my-name-is-john'));
  await agentFinished(call.caller, { after: before, timeoutMs: 30_000 });
  return call;
}

async function heardInCall(url: string, call: PlacedCall): Promise<string> {
  await call.caller.hangUp();
  const record = await vi.waitFor(
    async () => {
      const found = CallRecordSchema.parse(await (await api(url, 'GET', `/v2/calls/${call.callId}`)).json());
      expect(found.call_status).toBe('ended');
      return found;
    },
    { timeout: 20_000, interval: 200 },
  );
  return (record.transcript ?? [])
    .filter((m) => m.role === 'user')
    .map((m) => m.content)
    .join(' ');
}

describe('STT_POOL=machine (the default with WORKERS > 1)', () => {
  it('reads the callers of both workers in one recogniser process, starts it again after a SIGKILL, and stops it with the service', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'voicecall-machine-stt-'));
    const agentsFile = demoAgentsFile(dataDir, NUMBER, 120_000);
    const service = await startServiceProcess({
      dataDir,
      port: await freePort(),
      key: KEY,
      env: { WORKERS: '2', NODE_ID: 'box', AGENTS_FILE: agentsFile },
      started: children,
    });
    const primary = service.child.pid!;
    await vi.waitFor(() => expect(workers(primary)).toHaveLength(2), { timeout: 30_000, interval: 200 });
    expect(workers(primary).every((w) => w.env.includes('VOICECALL_MACHINE_RECOGNISER=1'))).toBe(true);

    // Calls until both workers have one; every caller is understood, through the one recogniser.
    const calls: PlacedCall[] = [];
    await vi.waitFor(
      async () => {
        calls.push(await sayName(service.url));
        expect(new Set((await callOwners({ dataDir })).values())).toEqual(new Set(['box-w0', 'box-w1']));
      },
      { timeout: 90_000, interval: 10 },
    );
    const first = recognisers(primary);
    expect(first).toHaveLength(1);
    for (const call of calls) expect(await heardInCall(service.url, call)).toMatch(/john/i);

    // Killed, it is started again by the next call that needs it.
    process.kill(first[0]!.pid, 'SIGKILL');
    await vi.waitFor(() => expect(recognisers(primary)).toHaveLength(0), { timeout: 10_000, interval: 100 });
    const after = await sayName(service.url);
    expect(await heardInCall(service.url, after)).toMatch(/john/i);
    const second = recognisers(primary);
    expect(second).toHaveLength(1);
    expect(second[0]!.pid).not.toBe(first[0]!.pid);

    // SIGTERM to the primary: the workers drain, and the recogniser goes with them.
    service.child.kill('SIGTERM');
    expect(await service.exited).toBe(0);
    expect(existsSync(`/proc/${second[0]!.pid}`)).toBe(false);
  }, 180_000);
});
