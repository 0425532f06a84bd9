// SIPp (Debian's sip-tester) as the far side of a SIP test: one call of a scenario on loopback, from
// ports of its own, in a directory of the test's. Its screen output only counts calls; its error log
// (-trace_err, one file per run) says why one failed, so both come back with the exit code.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { freeUdpPort } from '../../helpers/net.ts';

export interface SippRun {
  /** The port SIPp's SIP side listens on. */
  port: number;
  /** Resolves when SIPp exits: 0 when every call went as its scenario says. */
  done(): Promise<{ code: number | null; output: string }>;
  stop(): void;
}

/** Starts SIPp with `args` (scenario, service, target) for one call, timing out after `timeoutS`. */
export async function startSipp(args: string[], o: { dir: string; timeoutS?: number }): Promise<SippRun> {
  const port = await freeUdpPort();
  const child = spawn(
    'sipp',
    [
      ...args,
      '-m',
      '1',
      '-i',
      '127.0.0.1',
      '-p',
      String(port),
      '-mp',
      String(await freeUdpPort()),
      '-nostdin',
      '-timeout',
      `${o.timeoutS ?? 20}s`,
      '-timeout_error',
      '-trace_err',
    ],
    { cwd: o.dir, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = once(child, 'exit') as Promise<[number | null]>;
  return {
    port,
    async done() {
      const [code] = await exited;
      const errors = readdirSync(o.dir)
        .filter((f) => f.endsWith(`_${child.pid}_errors.log`))
        .map((f) => readFileSync(join(o.dir, f), 'utf8'))
        .join('\n');
      return { code, output: `${errors.slice(-3000)}\n${output.slice(-1000)}` };
    },
    stop: () => child.kill(),
  };
}
