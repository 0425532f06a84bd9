// Ending a speech worker thread. Once terminate() starts, the worker's port is closed and nothing
// holds the process open; a worker still inside native code (a flite block, a decoder step) takes
// a moment to stop, and if nothing else runs the process ends before the exit arrives, leaving
// whoever awaited the close unsettled (a script's exit code 13). A timer holds it until then.
import type { Worker } from 'node:worker_threads';

/** How long to hold the process for a terminated worker's exit. */
const EXIT_WAIT_MS = 10_000;

export function terminateWorker(worker: Worker): Promise<void> {
  return new Promise((resolve) => {
    const hold = setTimeout(resolve, EXIT_WAIT_MS);
    worker.once('exit', () => {
      clearTimeout(hold);
      resolve();
    });
    void worker.terminate();
  });
}
