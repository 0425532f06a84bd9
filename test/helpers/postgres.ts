// A throwaway PostgreSQL server from Debian's packages, started in a temporary directory for the
// store suite and the multi-node tests, and removed after them. The server refuses to run as
// root, so as root it runs as the packages' `postgres` user. Where no server is installed the
// callers skip with the reason this gives.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { freePort } from './net.ts';

export interface PostgresServer {
  /** postgres://… of the server's `postgres` database; `database()` makes a fresh one. */
  url: string;
  /** A new empty database on the server, as a connection URL. */
  database(): Promise<string>;
  stop(): Promise<void>;
}

const SUPERUSER = 'voicecall';

/** The newest installed server's bin directory, or why there is none. */
export function postgresBinaries(): { bin: string } | { missing: string } {
  const root = '/usr/lib/postgresql';
  const versions = existsSync(root)
    ? readdirSync(root).filter((v) => existsSync(join(root, v, 'bin', 'postgres')))
    : [];
  const newest = versions.sort((a, b) => Number(b) - Number(a))[0];
  return newest
    ? { bin: join(root, newest, 'bin') }
    : {
        missing: `no PostgreSQL server under ${root} (Debian package postgresql; npm test's set-up installs it when run as root)`,
      };
}

/** As root, the packages' postgres user (the server will not run as root); otherwise ourselves. */
function runAs(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const line = readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .find((l) => l.startsWith('postgres:'));
  if (!line) throw new Error('running as root and there is no postgres user to run the server as');
  const [, , uid, gid] = line.split(':');
  return { uid: Number(uid), gid: Number(gid) };
}

export async function startPostgres(): Promise<PostgresServer> {
  const found = postgresBinaries();
  if ('missing' in found) throw new Error(found.missing);
  const user = runAs();
  const dir = mkdtempSync(join(tmpdir(), 'voicecall-pg-'));
  if (user) chownSync(dir, user.uid, user.gid);
  const data = join(dir, 'data');
  const init = spawnSync(
    join(found.bin, 'initdb'),
    ['-D', data, '-U', SUPERUSER, '--auth=trust', '-E', 'UTF8', '--no-sync', '--no-instructions'],
    {
      ...(user ?? {}),
      encoding: 'utf8',
    },
  );
  if (init.status !== 0) throw new Error(`initdb failed: ${init.stderr}`);
  const port = await freePort();
  // A test server: durability off (the directory is thrown away), listening on 127.0.0.1 only.
  const server: ChildProcess = spawn(
    join(found.bin, 'postgres'),
    [
      '-D',
      data,
      '-p',
      String(port),
      '-k',
      dir,
      '-c',
      'listen_addresses=127.0.0.1',
      '-c',
      'fsync=off',
      '-c',
      'synchronous_commit=off',
      '-c',
      'full_page_writes=off',
      '-c',
      'max_connections=200',
    ],
    { ...(user ?? {}), stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let log = '';
  server.stderr!.on('data', (chunk: Buffer) => (log = (log + chunk.toString()).slice(-4000)));
  const exited = new Promise<void>((resolve) => server.once('exit', () => resolve()));
  const url = `postgres://${SUPERUSER}@127.0.0.1:${port}/postgres`;
  for (let attempt = 0; ; attempt++) {
    const client = new pg.Client({ connectionString: url });
    try {
      await client.connect();
      await client.end();
      break;
    } catch (error) {
      await client.end().catch(() => undefined);
      if (attempt > 100 || server.exitCode !== null) {
        server.kill('SIGKILL');
        throw new Error(`PostgreSQL did not start: ${(error as Error).message}\n${log}`, { cause: error });
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  let made = 0;
  return {
    url,
    async database() {
      const name = `store_${process.pid}_${++made}`;
      const admin = new pg.Client({ connectionString: url });
      await admin.connect();
      try {
        await admin.query(`CREATE DATABASE ${name}`);
      } finally {
        await admin.end();
      }
      return url.replace(/\/postgres$/, `/${name}`);
    },
    async stop() {
      // SIGINT: the fast shutdown (clients are disconnected, no wait for them).
      server.kill('SIGINT');
      await Promise.race([exited, new Promise((r) => setTimeout(r, 10_000))]);
      if (server.exitCode === null) server.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
