// With WORKERS > 1 each worker counts its own calls; GET /metrics reaches whichever worker the
// connection landed on, so a worker asks the primary, which sums every worker's registry with
// prom-client's AggregatorRegistry (each metric's own aggregator: counters add up, store-wide
// gauges take the max).
import cluster from 'node:cluster';
import { AggregatorRegistry, type Registry } from 'prom-client';
import { z } from 'zod';

const Request = z.object({ type: z.literal('voicecall:metrics-request'), id: z.number() });
const Answer = z.object({
  type: z.literal('voicecall:metrics-answer'),
  id: z.number(),
  text: z.string().optional(),
  error: z.string().optional(),
});

/** The primary's answer may take a scrape of every worker; past this the scrape fails. */
const ANSWER_TIMEOUT_MS = 5_000;

/** In a worker: `register` is what the primary collects from it; the returned function renders all workers'. */
export function clusterWideRender(register: Registry): () => Promise<string> {
  // The constructor installs the worker's answer to the primary's collection requests.
  new AggregatorRegistry();
  AggregatorRegistry.setRegistries([register]);
  let nextId = 0;
  const waiting = new Map<number, { resolve: (text: string) => void; reject: (error: Error) => void }>();
  process.on('message', (message: unknown) => {
    const answer = Answer.safeParse(message);
    if (!answer.success) return;
    const pending = waiting.get(answer.data.id);
    waiting.delete(answer.data.id);
    if (answer.data.text !== undefined) pending?.resolve(answer.data.text);
    else pending?.reject(new Error(`metrics of the other workers unavailable: ${answer.data.error ?? 'no answer'}`));
  });
  return () =>
    new Promise<string>((resolve, reject) => {
      const id = nextId++;
      const timer = setTimeout(() => {
        waiting.delete(id);
        reject(new Error('metrics of the other workers unavailable: the primary did not answer'));
      }, ANSWER_TIMEOUT_MS);
      waiting.set(id, {
        resolve: (text) => (clearTimeout(timer), resolve(text)),
        reject: (error) => (clearTimeout(timer), reject(error)),
      });
      process.send?.({ type: 'voicecall:metrics-request', id });
    });
}

/** In the primary: answers each worker's request with the sum over all workers. */
export function serveClusterMetrics(): void {
  const aggregator = new AggregatorRegistry();
  cluster.on('message', (worker, message: unknown) => {
    const request = Request.safeParse(message);
    if (!request.success) return;
    const { id } = request.data;
    aggregator.clusterMetrics().then(
      (text) => worker.send({ type: 'voicecall:metrics-answer', id, text }),
      (error: unknown) => worker.send({ type: 'voicecall:metrics-answer', id, error: (error as Error).message }),
    );
  });
}
