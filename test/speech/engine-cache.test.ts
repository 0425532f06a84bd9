import { describe, expect, it } from 'vitest';
import { EngineCache } from '../../src/speech/engine-cache.ts';

/** An engine that only counts how often it was closed. */
class FakeEngine {
  closes = 0;
  constructor(readonly name: string) {}
  async close(): Promise<void> {
    this.closes++;
  }
}

function fakeCache(bound: number) {
  const cache = new EngineCache<FakeEngine>(bound);
  const made = new Map<string, FakeEngine[]>();
  const lease = (key: string) =>
    cache.lease(key, () => {
      const engine = new FakeEngine(key);
      made.set(key, [...(made.get(key) ?? []), engine]);
      return engine;
    });
  return { cache, made, lease };
}

describe('EngineCache', () => {
  it('one key gives one engine while it stays cached', () => {
    const { lease, made } = fakeCache(2);
    const first = lease('a');
    const second = lease('a');
    expect(second.engine).toBe(first.engine);
    first.release();
    second.release();
    expect(lease('a').engine).toBe(first.engine);
    expect(made.get('a')).toHaveLength(1);
  });

  it('the cache never grows past its bound with idle engines; the least recently used is closed', () => {
    const { cache, lease } = fakeCache(3);
    const engines = ['a', 'b', 'c'].map((key) => {
      const held = lease(key);
      held.release();
      return held.engine;
    });
    // Using "a" again makes "b" the least recently used.
    lease('a').release();
    lease('d').release();
    expect(cache.size).toBe(3);
    expect(cache.keys()).toEqual(['c', 'a', 'd']);
    expect(engines.map((e) => e.closes)).toEqual([0, 1, 0]);
    for (let i = 0; i < 50; i++) lease(`k${i}`).release();
    expect(cache.size).toBe(3);
    expect(engines.map((e) => e.closes)).toEqual([1, 1, 1]);
  });

  it('an engine evicted and asked for again is made anew', () => {
    const { lease, made } = fakeCache(1);
    lease('a').release();
    lease('b').release();
    const again = lease('a');
    expect(made.get('a')).toHaveLength(2);
    expect(again.engine).toBe(made.get('a')![1]);
    expect(made.get('a')![0]!.closes).toBe(1);
  });

  it('an engine in use by a call is never closed by eviction; it is closed once released if over the bound', () => {
    const { cache, lease } = fakeCache(2);
    const a = lease('a');
    const b = lease('b');
    const c = lease('c');
    // Every engine is in use: the cache runs over its bound rather than close one.
    expect(cache.size).toBe(3);
    expect([a, b, c].map((l) => l.engine.closes)).toEqual([0, 0, 0]);
    b.release();
    // Idle and least recently used of the idle ones: closed, and the cache is back at its bound.
    expect(b.engine.closes).toBe(1);
    expect(cache.keys()).toEqual(['a', 'c']);
    a.release();
    expect(a.engine.closes).toBe(0);
    expect(cache.size).toBe(2);
  });

  it('an engine held by two calls stays open until both have released it', () => {
    const { cache, lease } = fakeCache(1);
    const first = lease('a');
    const second = lease('a');
    lease('b').release();
    // "b" was the idle one; "a" is held twice.
    expect(cache.keys()).toEqual(['a']);
    lease('c').release();
    first.release();
    lease('d').release();
    expect(first.engine.closes).toBe(0);
    second.release();
    lease('e').release();
    expect(first.engine.closes).toBe(1);
  });

  it('release twice counts once', () => {
    const { cache, lease } = fakeCache(1);
    const first = lease('a');
    const second = lease('a');
    first.release();
    first.release();
    lease('b').release();
    // A second release of the first lease must not free the engine the second still holds.
    expect(second.engine.closes).toBe(0);
    expect(cache.keys()).toEqual(['a']);
    second.release();
    lease('c').release();
    expect(second.engine.closes).toBe(1);
  });

  it('an engine cached under two keys is closed only once no key holds it', () => {
    const cache = new EngineCache<FakeEngine>(1);
    const shared = new FakeEngine('shared');
    const one = cache.lease('one', () => shared);
    cache.lease('two', () => shared).release();
    // "two" is evicted as the idle one, but "one" still holds the shared engine.
    expect(cache.keys()).toEqual(['one']);
    expect(shared.closes).toBe(0);
    one.release();
    cache.lease('other', () => new FakeEngine('other')).release();
    expect(shared.closes).toBe(1);
  });

  it('a factory that throws caches nothing', () => {
    const cache = new EngineCache<FakeEngine>(2);
    expect(() =>
      cache.lease('bad', () => {
        throw new Error('no engine');
      }),
    ).toThrow('no engine');
    expect(cache.size).toBe(0);
  });

  it('an engine that fails to close is dropped all the same', async () => {
    const cache = new EngineCache<FakeEngine>(1);
    const broken = new FakeEngine('broken');
    broken.close = () => Promise.reject(new Error('stuck'));
    cache.lease('broken', () => broken).release();
    expect(() => cache.lease('next', () => new FakeEngine('next')).release()).not.toThrow();
    expect(cache.keys()).toEqual(['next']);
    await cache.close();
  });

  it('close closes every engine, in use or idle, once each', async () => {
    const { cache, lease } = fakeCache(4);
    const held = lease('a');
    const idle = lease('b');
    idle.release();
    const shared = new FakeEngine('shared');
    cache.lease('c', () => shared);
    cache.lease('d', () => shared);
    await cache.close();
    expect([held.engine.closes, idle.engine.closes, shared.closes]).toEqual([1, 1, 1]);
    expect(cache.size).toBe(0);
    // A lease that ends after close has nothing left to evict or close.
    held.release();
    expect(held.engine.closes).toBe(1);
  });

  it('close waits for the closes eviction started', async () => {
    const cache = new EngineCache<FakeEngine>(1);
    let finishClose = (): void => undefined;
    const slow = new FakeEngine('slow');
    slow.close = () => new Promise<void>((resolve) => (finishClose = resolve));
    cache.lease('slow', () => slow).release();
    cache.lease('next', () => new FakeEngine('next')).release();
    let closed = false;
    const closing = cache.close().then(() => (closed = true));
    await new Promise((resolve) => setImmediate(resolve));
    expect(closed).toBe(false);
    finishClose();
    await closing;
    expect(closed).toBe(true);
  });
});
