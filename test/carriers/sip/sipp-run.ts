// SIPp (Debian's sip-tester) as the far side of a SIP test: one call of a scenario on loopback, from
// ports of its own, in a directory of the test's. Its screen output only counts calls; its error log
// (-trace_err, one file per run) says why one failed, so both come back with the exit code.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { freeUdpPort } from '../../helpers/net.ts';

const fixtures = join(import.meta.dirname, '..', '..', '..', 'media', 'fixtures');

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

/**
 * The callee's words for SIPp's rtp_stream: the phrase as 8 kHz mu-law, then 3 s of mu-law silence (0xff) so the
 * recogniser hears the turn end before SIPp's RTP stops; a plain 44-byte header (format 7), which SIPp reads.
 */
export function writeSippWav(path: string): void {
  const file = readdirSync(fixtures).find((f) => f.startsWith('01-my-name-is-john') && f.endsWith('.8k-ulaw.wav'))!;
  writeUlawWav(path, Buffer.concat([ulawData(join(fixtures, file)), Buffer.alloc(3 * 8000, 0xff)]));
}

/**
 * An answering machine for SIPp's rtp_stream, as media/sim-scripts/voicemail.json plays it: its greeting, 0.4 s of
 * quiet, the beep, then quiet while the message is left.
 */
export function writeMachineWav(path: string): void {
  const prompts = join(import.meta.dirname, '..', '..', '..', 'media', 'sim-scripts', 'prompts');
  writeUlawWav(
    path,
    Buffer.concat([
      ulawData(join(prompts, 'voicemail-greeting-slt.8k-ulaw.wav')),
      Buffer.alloc(0.4 * 8000, 0xff),
      ulawData(join(prompts, 'beep-1000hz.8k-ulaw.wav')),
      Buffer.alloc(6 * 8000, 0xff),
    ]),
  );
}

/** The μ-law bytes of an 8 kHz μ-law WAV file. */
function ulawData(file: string): Buffer {
  const source = readFileSync(file);
  const at = source.indexOf('data');
  return source.subarray(at + 8, at + 8 + source.readUInt32LE(at + 4));
}

/** Writes 8 kHz mono μ-law bytes as a WAV file (format 7). */
function writeUlawWav(path: string, data: Buffer): void {
  const head = Buffer.alloc(44);
  head.write('RIFF', 0);
  head.writeUInt32LE(36 + data.length, 4);
  head.write('WAVEfmt ', 8);
  head.writeUInt32LE(16, 16);
  head.writeUInt16LE(7, 20);
  head.writeUInt16LE(1, 22);
  head.writeUInt32LE(8000, 24);
  head.writeUInt32LE(8000, 28);
  head.writeUInt16LE(1, 32);
  head.writeUInt16LE(8, 34);
  head.write('data', 36);
  head.writeUInt32LE(data.length, 40);
  writeFileSync(path, Buffer.concat([head, data]));
}
