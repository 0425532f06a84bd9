// WORKERS > 1: the primary process serves nothing itself. It starts one service process per
// worker on the same port (node:cluster hands each new connection to a worker, and a call's
// sockets stay where they landed), restarts a worker that dies, and stops them all on SIGTERM.
// The first worker starts alone and does the once-per-start work (migrations, a generated API
// key, the agents file); the others start once it is ready. Each worker is a node of its own
// (NODE_ID-w<i>): a restarted worker keeps its id, so at start it finishes the calls it had
// when it died (error_service) while the other workers' calls go on. With STT_POOL=machine the
// primary also relays the workers' utterances to the machine's one recogniser process.
import cluster, { type Worker } from 'node:cluster';
import type { Logger } from 'pino';
import { z } from 'zod';
import { sipListenOfWorker, type Config } from '../config.ts';
import { serveClusterMetrics } from '../metrics/cluster.ts';
import { MACHINE_RECOGNISER_ENV, relayMachineRecogniser } from '../speech/stt/moonshine/machine-pool.ts';

/** Set in a worker's environment: which worker it is, and whether it does the once-per-start work. */
export const WORKER_ENV = { index: 'VOICECALL_WORKER', setup: 'VOICECALL_WORKER_SETUP' } as const;

const Ready = z.object({ type: z.literal('voicecall:ready') });

export const SUPERVISOR_DEFAULTS = {
  /** Wait before restarting a worker that died; doubled while it keeps dying young, up to maxRestartDelayMs. */
  restartDelayMs: 500,
  maxRestartDelayMs: 30_000,
  /** A worker that lived this long was healthy: its next restart waits the shortest delay again. */
  healthyAfterMs: 30_000,
} as const;

/** In a worker: tells the primary it listens (the next workers may start). */
export function announceReady(): void {
  process.send?.({ type: 'voicecall:ready' });
}

/** In a worker: whether it does the once-per-start work (or is not a worker at all). */
export function doesSetup(): boolean {
  return !cluster.isWorker || process.env[WORKER_ENV.setup] === '1';
}

interface Slot {
  index: number;
  worker: Worker | undefined;
  ready: boolean;
  startedAt: number;
  delayMs: number;
}

export function superviseWorkers(config: Config, logger: Logger): void {
  const slots: Slot[] = Array.from({ length: config.workers }, (_, index) => ({
    index,
    worker: undefined,
    ready: false,
    startedAt: 0,
    delayMs: SUPERVISOR_DEFAULTS.restartDelayMs,
  }));
  // Worked out before any worker starts, so a port range that does not fit stops the start (a ConfigError).
  const sip = config.sip;
  const sipListen = sip ? slots.map((slot) => sipListenOfWorker(sip.listen, slot.index)) : undefined;
  let stopping = false;
  let firstReady = false;
  // Audio for the machine's recogniser crosses to it as typed arrays, not JSON.
  cluster.setupPrimary({ serialization: 'advanced' });
  serveClusterMetrics();
  const recogniser = config.sttPool === 'machine' ? relayMachineRecogniser(logger) : null;
  const exit = (code: number): void => {
    void (recogniser?.stop() ?? Promise.resolve()).finally(() => process.exit(code));
  };

  const envOf = (index: number, setup: boolean): Record<string, string> => ({
    [WORKER_ENV.index]: String(index),
    [WORKER_ENV.setup]: setup ? '1' : '0',
    NODE_ID: `${config.nodeId}-w${index}`,
    // A fixed peer port is the first worker's; the others take the ports after it.
    PEER_PORT: String(config.peer.port === 0 ? 0 : config.peer.port + index),
    // Likewise SIP: a dialog's requests must all reach the process that holds it.
    ...(sipListen ? { SIP_LISTEN: sipListen[index]! } : {}),
    ...(recogniser ? { [MACHINE_RECOGNISER_ENV]: '1' } : {}),
  });

  const start = (slot: Slot, setup: boolean): void => {
    const worker = cluster.fork(envOf(slot.index, setup));
    slot.worker = worker;
    slot.ready = false;
    slot.startedAt = Date.now();
    worker.on('message', (message: unknown) => {
      if (!Ready.safeParse(message).success) return;
      slot.ready = true;
      logger.info({ worker: slot.index, pid: worker.process.pid }, 'worker ready');
      if (!firstReady) {
        firstReady = true;
        for (const other of slots) if (other !== slot) start(other, false);
      }
    });
    worker.on('exit', (code, signal) => {
      slot.worker = undefined;
      if (stopping) return;
      if (!firstReady) {
        // The first worker could not start (bad configuration, a store it cannot open): nor could the others.
        logger.error({ worker: slot.index, code, signal }, 'the first worker failed to start; stopping');
        process.exit(typeof code === 'number' && code !== 0 ? code : 1);
      }
      const lived = Date.now() - slot.startedAt;
      slot.delayMs =
        lived >= SUPERVISOR_DEFAULTS.healthyAfterMs
          ? SUPERVISOR_DEFAULTS.restartDelayMs
          : Math.min(slot.delayMs * 2, SUPERVISOR_DEFAULTS.maxRestartDelayMs);
      logger.error(
        { worker: slot.index, pid: worker.process.pid, code, signal, restart_in_ms: slot.delayMs },
        'worker died; its calls end with error_service when it restarts',
      );
      setTimeout(() => {
        if (!stopping) start(slot, false);
      }, slot.delayMs).unref();
    });
  };

  const stop = (signal: string): void => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'stopping the workers');
    const running = slots.filter((slot) => slot.worker);
    let left = running.length;
    let failed = false;
    if (left === 0) exit(0);
    for (const slot of running) {
      const worker = slot.worker!;
      worker.once('exit', (code) => {
        // A worker still starting has no calls and no handler yet: the signal itself ends it.
        failed ||= slot.ready && code !== 0;
        if (--left === 0) exit(failed ? 1 : 0);
      });
      // Each worker drains its own calls (SHUTDOWN_DRAIN_MS) before it exits.
      worker.process.kill('SIGTERM');
    }
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));

  logger.info({ workers: config.workers, port: config.port }, 'starting workers');
  start(slots[0]!, true);
}
