// Shared by the CLI engines: keep spawned processes from holding Node open while they wait.
import type { ChildProcess } from 'node:child_process';

/** A waiting spare must not hold the Node process open; a running job must, until it ends. */
export function holdProcessOpen(child: ChildProcess, hold: boolean): void {
  if (hold) child.ref();
  else child.unref();
  const method = hold ? 'ref' : 'unref';
  for (const stream of [child.stdin, child.stdout, child.stderr]) {
    if (stream && method in stream) {
      const fn: unknown = Reflect.get(stream, method);
      if (typeof fn === 'function') fn.call(stream);
    }
  }
}
