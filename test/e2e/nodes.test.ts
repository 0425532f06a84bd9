// Two service processes sharing one store, as real processes: a node that starts leaves a live
// peer's call alone (recovery used to end every ongoing call in the database), the organization's
// concurrent-call limit holds across both, and once the peer is killed and its lease runs out, the
// survivor finishes its call with error_service, once, and its slot is free again.
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { CallRecordSchema } from '../../src/records/record.ts';
import { freePort } from '../helpers/net.ts';
import { agentFinished, placeInboundCall } from '../helpers/phone.ts';
import { apiAs, demoAgentsFile, startServiceProcess } from '../helpers/service-process.ts';

const KEY = 'nodes-key-0123456789-0123456789-0123';
const NUMBER = '+15550300002';
const LEASE_MS = 3_000;
const children: ChildProcess[] = [];
afterEach(() => {
  for (const child of children.splice(0)) child.kill('SIGKILL');
});

const api = apiAs(KEY);

const recordOf = async (url: string, callId: string) =>
  CallRecordSchema.parse(await (await api(url, 'GET', `/v2/calls/${callId}`)).json());

describe('nodes sharing a store', () => {
  it("a node starting leaves a live peer's call alone and counts it against the organization's limit; when the peer is killed, the survivor finishes its call once its lease runs out", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'voicecall-nodes-'));
    // One call at a time for the organization, across both processes.
    // The demo agent answering NUMBER, from the agents file both nodes load (a node loading the shipped file would undo
    // a PATCH).
    const agentsFile = demoAgentsFile(dataDir, NUMBER, 60_000);
    const env = { NODE_LEASE_MS: String(LEASE_MS), MAX_CONCURRENT_CALLS: '1', AGENTS_FILE: agentsFile };
    const first = await startServiceProcess({ dataDir, port: await freePort(), key: KEY, env, started: children });
    const { caller, callId } = await placeInboundCall(first.url, NUMBER);
    await agentFinished(caller, { after: 0, timeoutMs: 20_000, quietMs: 200 });

    const second = await startServiceProcess({ dataDir, port: await freePort(), key: KEY, env, started: children });
    // Two heartbeats of the second node later, the first node's call still runs and is still its own.
    await new Promise((r) => setTimeout(r, LEASE_MS));
    expect((await recordOf(second.url, callId)).call_status).toBe('ongoing');
    expect(caller.closed).toBe(false);
    // The organization's one slot is held by the first node's call: a call reaching the second node is refused.
    const refused = await placeInboundCall(second.url, NUMBER);
    await refused.caller.waitForClose();
    expect(await recordOf(second.url, refused.callId)).toMatchObject({
      call_status: 'not_connected',
      disconnection_reason: 'concurrency_limit_reached',
    });

    first.child.kill('SIGKILL');
    await first.exited;
    const killedAt = Date.now();
    const ended = await vi.waitFor(
      async () => {
        const record = await recordOf(second.url, callId);
        expect(record.call_status).toBe('error');
        return record;
      },
      { timeout: LEASE_MS * 4, interval: 200 },
    );
    expect(ended).toMatchObject({
      disconnection_reason: 'error_service',
      disconnection_message: 'The service stopped during the call.',
    });
    // Not before the lease could have run out (renewed every third of it), and charged up to its last sign of life.
    expect(Date.now() - killedAt).toBeGreaterThan(LEASE_MS / 3);
    expect(ended.duration_ms).toBeGreaterThan(0);
    expect(ended.transcript!.length).toBeGreaterThan(0);
    // Finished once: later beats change nothing.
    await new Promise((r) => setTimeout(r, LEASE_MS));
    expect(await recordOf(second.url, callId)).toEqual(ended);
    // The slot is free again: the second node takes a call.
    const next = await placeInboundCall(second.url, NUMBER);
    await agentFinished(next.caller, { after: 0, timeoutMs: 20_000, quietMs: 200 });
    expect((await recordOf(second.url, next.callId)).call_status).toBe('ongoing');
  }, 90_000);
});
