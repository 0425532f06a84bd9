// A bounded cache of speech engines, least recently used out first, that hands engines out on
// leases. Engines are made per distinct configuration and some keep processes or worker threads
// warm, so an unbounded cache lets anyone who can change an agent's voice or recogniser settings
// pile them up until the machine runs out. Eviction closes only idle engines: one a call still
// holds a lease on stays open, and the cache may run over its bound until such leases end.
import type { EngineLease } from './types.ts';

export interface ClosableEngine {
  close(): Promise<void>;
}

interface Entry<E> {
  readonly engine: E;
  /** Leases not yet released: while above 0, eviction leaves the engine alone. */
  leases: number;
}

export class EngineCache<E extends ClosableEngine> {
  /** Map order is recency: a used entry is moved to the end, so the first idle one is the least recently used. */
  private readonly entries = new Map<string, Entry<E>>();
  /** Closes started by eviction, awaited by close() so shutdown waits for them too. */
  private readonly closing = new Set<Promise<void>>();

  constructor(readonly bound: number) {}

  /** Engines cached now, in use or idle. */
  get size(): number {
    return this.entries.size;
  }

  /** The cached keys, least recently used first. */
  keys(): string[] {
    return [...this.entries.keys()];
  }

  /** The engine for `key` (made by `make` if none is cached), held until the lease is released. */
  lease(key: string, make: () => E): EngineLease<E> {
    let entry = this.entries.get(key);
    if (entry) this.entries.delete(key);
    else entry = { engine: make(), leases: 0 };
    this.entries.set(key, entry);
    entry.leases++;
    this.trim();
    const held = entry;
    let released = false;
    return {
      engine: held.engine,
      release: () => {
        // Idempotent: a second release must not free an engine another call still holds.
        if (released) return;
        released = true;
        held.leases--;
        this.trim();
      },
    };
  }

  /** Closes every cached engine, in use or not, and waits for closes eviction started. */
  async close(): Promise<void> {
    const engines = new Set([...this.entries.values()].map((entry) => entry.engine));
    this.entries.clear();
    await Promise.allSettled([...[...engines].map((engine) => engine.close()), ...this.closing]);
  }

  /**
   * Evicts idle entries, least recently used first, until the cache is within its bound or only engines in use are
   * left.
   */
  private trim(): void {
    while (this.entries.size > this.bound) {
      const idle = [...this.entries].find(([, entry]) => entry.leases === 0);
      if (!idle) return;
      const [key, { engine }] = idle;
      this.entries.delete(key);
      // A factory may hand one shared engine out under several keys (pocketsphinx, moonshine):
      // it is closed only once no key holds it.
      if ([...this.entries.values()].some((entry) => entry.engine === engine)) continue;
      const closed = closeQuietly(engine);
      this.closing.add(closed);
      void closed.then(() => this.closing.delete(closed));
    }
  }
}

/** Nothing waits on an evicted engine's close, so a failure to close (thrown or rejected) is dropped. */
function closeQuietly(engine: ClosableEngine): Promise<void> {
  try {
    return engine.close().catch(() => undefined);
  } catch {
    return Promise.resolve();
  }
}
