// The machine's recogniser process (machine-pool.ts), forked by the cluster's primary: Moonshine's
// worker threads for each model a service process asks for, one queue per model for the whole
// machine. It ends when the primary does (its IPC channel closes) or on SIGTERM.
import type { z } from 'zod';
import { SttError } from '../errors.ts';
import { MOONSHINE_DEFAULTS, moonshineModelDir } from './engine.ts';
import { type FromRecogniser, type RecogniserAnswer, ToRecogniser } from './machine-pool.ts';
import { MoonshineThreadPool } from './pool.ts';
import type { MoonshineSize } from './recogniser.ts';

const pools = new Map<MoonshineSize, MoonshineThreadPool>();
/** Readings under way, by `${worker}:${id}`. */
const reading = new Map<string, AbortController>();

function poolOf(model: MoonshineSize): MoonshineThreadPool {
  let pool = pools.get(model);
  if (!pool)
    pools.set(
      model,
      (pool = new MoonshineThreadPool({
        model,
        modelDir: moonshineModelDir(model),
        threads: MOONSHINE_DEFAULTS.workers,
      })),
    );
  return pool;
}

function answer(to: number, message: RecogniserAnswer): void {
  // Typed here; the primary checks it as it arrives.
  const reply: z.infer<typeof FromRecogniser> = { to, answer: message };
  process.send?.(reply);
}

const codeOf = (err: unknown): SttError['code'] => (err instanceof SttError ? err.code : 'STT_ENGINE_CRASHED');

process.on('message', (message: unknown) => {
  const parsed = ToRecogniser.safeParse(message);
  if (!parsed.success) return;
  if ('gone' in parsed.data) {
    const prefix = `${parsed.data.gone}:`;
    for (const [key, controller] of reading) if (key.startsWith(prefix)) controller.abort();
    return;
  }
  const { from, request } = parsed.data;
  switch (request.type) {
    case 'voicecall:stt-open':
      poolOf(request.model)
        .ready()
        .then(
          () => answer(from, { type: 'voicecall:stt-opened', model: request.model }),
          (err: unknown) =>
            answer(from, {
              type: 'voicecall:stt-open-failed',
              model: request.model,
              code: codeOf(err),
              message: (err as Error).message,
            }),
        );
      return;
    case 'voicecall:stt-read': {
      const key = `${from}:${request.id}`;
      const controller = new AbortController();
      reading.set(key, controller);
      const pool = poolOf(request.model);
      // A recogniser started again after a crash gets readings from streams opened before it: it loads the model first.
      pool
        .ready()
        .then(() => pool.read(request.samples, request.sampleRate, request.phrases, controller.signal))
        .then(
          (text) => answer(from, { type: 'voicecall:stt-text', id: request.id, text }),
          (err: unknown) => {
            // A cancelled reading has no one waiting for it.
            if (!controller.signal.aborted)
              answer(from, {
                type: 'voicecall:stt-error',
                id: request.id,
                code: codeOf(err),
                message: (err as Error).message,
              });
          },
        )
        .finally(() => reading.delete(key));
      return;
    }
    case 'voicecall:stt-cancel':
      reading.get(`${from}:${request.id}`)?.abort();
      return;
  }
});

let closing = false;
async function shutdown(): Promise<void> {
  if (closing) return;
  closing = true;
  await Promise.allSettled([...pools.values()].map((pool) => pool.close()));
  process.exit(0);
}
process.on('disconnect', () => void shutdown());
process.on('SIGTERM', () => void shutdown());
