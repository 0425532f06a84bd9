// Several nodes behind one SIP address: Debian's Kamailio, started from deploy/kamailio/kamailio.cfg (only its
// defines changed: loopback ports, a dispatcher list naming the two nodes, one-second probes, and round-robin in place
// of the Call-ID hash so that two calls surely reach both nodes), in front of two
// service processes sharing one SQLite store, each with its own SIP_LISTEN and RTP_PORTS. SIPp calls Kamailio's
// address; its ACK and BYE follow the Record-Route to the node that answered. The calls are answered and spread over
// both nodes (each record's owner_node says which); once one node is killed and Kamailio's OPTIONS probes have marked
// it down, every new call goes straight to the survivor and is answered.
import { spawn, type ChildProcess } from 'node:child_process';
import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { freePort, freeUdpPort } from '../helpers/net.ts';
import { apiAs, callOwners, demoAgentsFile, queryStore, startServiceProcess } from '../helpers/service-process.ts';
import { startSipp } from '../carriers/sip/sipp-run.ts';

const KEY = 'kamailio-key-0123456789-0123456789-01';
const NUMBER = '+15550800001';
const HOST = '127.0.0.1';
const PING_INTERVAL_S = 1;
const deploy = join(import.meta.dirname, '..', '..', 'deploy', 'kamailio');
const caller = join(import.meta.dirname, '..', 'carriers', 'sip', 'sipp', 'caller-proxied.xml');

const dir = mkdtempSync(join(tmpdir(), 'sip-kamailio-'));
const children: ChildProcess[] = [];
/** Kamailio's process groups: its main process forks workers that a kill of the main process alone leaves behind. */
const groups: number[] = [];
afterAll(async () => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  for (const group of groups) {
    try {
      process.kill(-group, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  rmSync(dir, { recursive: true, force: true });
});

/** Kamailio in the foreground, logging to its stderr, listening on `port` and dispatching to `nodes`. */
async function startKamailio(port: number, nodes: number[]): Promise<{ log: () => string }> {
  const cfg = join(dir, 'kamailio.cfg');
  copyFileSync(join(deploy, 'kamailio.cfg'), cfg);
  const list = join(dir, 'dispatcher.list');
  writeFileSync(list, nodes.map((p) => `1 sip:${HOST}:${p}\n`).join(''));
  const child = spawn(
    'kamailio',
    [
      '-f',
      cfg,
      '-DD',
      '-E',
      '-Y',
      dir,
      '-m',
      '32',
      '-M',
      '4',
      '-A',
      `LISTEN_ADDRESS=udp:${HOST}:${port}`,
      '-A',
      `DISPATCHER_LIST="${list}"`,
      '-A',
      `PING_INTERVAL_S=${PING_INTERVAL_S}`,
      '-A',
      'DISPATCH_ALG="4"',
      '-A',
      `ALLOWED_SOURCES="${HOST}/32"`,
    ],
    { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'], detached: true },
  );
  groups.push(child.pid!);
  let log = '';
  for (const out of [child.stdout!, child.stderr!]) out.on('data', (chunk: Buffer) => (log += chunk.toString()));
  // Up once it says which sockets it listens on (bound before its workers start).
  await vi.waitFor(
    () => {
      if (child.exitCode !== null) throw new Error(`kamailio exited ${child.exitCode}:\n${log.slice(-3000)}`);
      expect(log).toMatch(/Listening on/);
    },
    { timeout: 10_000, interval: 100 },
  );
  return { log: () => log };
}

/** One SIPp call to the proxy: exit code 0 when it was answered and its BYE got its 200 through the proxy. */
async function callThroughProxy(proxyPort: number): Promise<void> {
  const run = await startSipp(['-sf', caller, '-s', NUMBER.slice(1), `${HOST}:${proxyPort}`], {
    dir,
    timeoutS: 15,
  });
  const { code, output } = await run.done();
  expect(code, output).toBe(0);
}

/** The owner_node of each SIP call, by its SIP Call-ID, from the records the nodes wrote. */
async function ownersBySipCall(): Promise<string[]> {
  const owners = await callOwners({ dataDir: dir });
  const rows = await queryStore<{ call_id: string }>({ dataDir: dir }, 'SELECT call_id FROM calls ORDER BY rowid');
  return rows.map((r) => owners.get(r.call_id) ?? 'none');
}

describe('service nodes behind Kamailio', () => {
  it('spreads calls to one SIP address over both nodes, and once a node is killed and its OPTIONS probes fail, sends every new call to the survivor, which answers it', async () => {
    const agents = demoAgentsFile(dir, NUMBER, 60_000);
    const [sipA, sipB, proxyPort] = [await freeUdpPort(), await freeUdpPort(), await freeUdpPort()];
    const node = async (id: string, sip: number, rtp: string) =>
      startServiceProcess({
        dataDir: dir,
        port: await freePort(),
        key: KEY,
        started: children,
        env: {
          NODE_ID: id,
          AGENTS_FILE: agents,
          SIP_LISTEN: `udp:${HOST}:${sip}`,
          SIP_PUBLIC_HOST: HOST,
          RTP_PORTS: rtp,
        },
      });
    // Started together (their migrations take turns): a cold start compiles the tree, the bulk of this test's time.
    const [a, b] = await Promise.all([node('node-a', sipA, '48100-48149'), node('node-b', sipB, '48150-48199')]);
    // Both nodes see the INVITE coming from the proxy's address: the trunk allows it.
    const trunk = await apiAs(KEY)(a.url, 'POST', '/v2/sip-trunks', {
      name: 'behind kamailio',
      numbers: [NUMBER],
      inbound: { allowed_addresses: [`${HOST}/32`] },
    });
    expect(trunk.status, await trunk.text()).toBe(201);
    const kamailio = await startKamailio(proxyPort, [sipA, sipB]);

    for (let i = 0; i < 2; i++) await callThroughProxy(proxyPort);
    const spread = await ownersBySipCall();
    expect([...spread].sort()).toEqual(['node-a', 'node-b']);

    b.child.kill('SIGKILL');
    await b.exited;
    // Marked down by the first probe left unanswered (the proxy's transaction timeout, FR_TIMER_MS, after it is sent).
    await vi.waitFor(() => expect(kamailio.log()).toContain(`service node sip:${HOST}:${sipB} down`), {
      timeout: 15_000,
      interval: 200,
    });
    const logBefore = kamailio.log().length;

    for (let i = 0; i < 2; i++) await callThroughProxy(proxyPort);
    const after = (await ownersBySipCall()).slice(2);
    expect(after).toEqual(['node-a', 'node-a']);
    // Straight to the survivor: the proxy never tried the dead node first.
    const later = kamailio.log().slice(logBefore);
    expect(later).not.toMatch(/retried at/);
    expect(later).not.toContain(`to sip:${HOST}:${sipB}`);
  }, 120_000);
});
