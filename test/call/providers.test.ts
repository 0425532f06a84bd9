import { describe, expect, it } from 'vitest';
import { CallProviders, ProviderChain, type ProviderSwitch } from '../../src/call/providers.ts';

const T0 = 1_700_000_000_000;

describe('ProviderChain', () => {
  it('moves only forward, reports each move once, and ignores a late failure of a provider already left', () => {
    const moves: string[] = [];
    const chain = new ProviderChain(
      'voice',
      [
        { name: 'a', provider: 'A' },
        { name: 'b', provider: 'B' },
        { name: 'c', provider: 'C' },
      ],
      (from, to, reason) => moves.push(`${from}->${to} ${reason}`),
    );
    expect([chain.current, chain.position, chain.hasNext]).toEqual(['A', 0, true]);
    expect(chain.fail('connect', 'A')).toBe(true);
    // The same failure reported again (its error event after its rejected request): no second move.
    expect(chain.fail('error', 'A')).toBe(true);
    expect([chain.current, chain.name]).toEqual(['B', 'b']);
    expect(chain.fail('timeout')).toBe(true);
    expect([chain.current, chain.hasNext]).toEqual(['C', false]);
    expect(chain.fail('error')).toBe(false);
    expect(chain.current).toBe('C');
    expect(moves).toEqual(['0->1 connect', '1->2 timeout']);
  });
});

describe('CallProviders', () => {
  it('keeps, per provider, the turns it served, when the call moved to it and why, and its own stage latencies', () => {
    let now = T0;
    const switches: ProviderSwitch[] = [];
    const providers = new CallProviders(
      () => now,
      (s) => switches.push(s),
    );
    const stt = providers.chain('stt', [
      { name: 'openai', provider: 1 },
      { name: 'pocketsphinx', provider: 2 },
    ]);
    providers.chain('llm', [{ name: 'gpt', provider: 'gpt' }]);
    providers.served('stt', null, 'asr', 120);
    providers.served('stt', 1);
    providers.served('llm', 1, 'llm', 300);
    now = T0 + 4_321;
    stt.fail('connect');
    providers.served('stt', null, 'asr', 40);
    providers.served('stt', 2);
    providers.served('stt', 3);
    expect(switches).toEqual([
      { kind: 'stt', from: 'openai', to: 'pocketsphinx', fromPosition: 0, toPosition: 1, reason: 'connect', at: now },
    ]);
    expect(providers.summary(T0)).toEqual([
      {
        kind: 'stt',
        name: 'openai',
        position: 0,
        switched_at: null,
        reason: null,
        first_turn: 1,
        last_turn: 1,
        asr: { p50: 120, p90: 120, p95: 120, p99: 120, min: 120, max: 120, num: 1 },
      },
      {
        kind: 'llm',
        name: 'gpt',
        position: 0,
        switched_at: null,
        reason: null,
        first_turn: 1,
        last_turn: 1,
        llm: { p50: 300, p90: 300, p95: 300, p99: 300, min: 300, max: 300, num: 1 },
      },
      {
        kind: 'stt',
        name: 'pocketsphinx',
        position: 1,
        switched_at: 4.321,
        reason: 'connect',
        first_turn: 2,
        last_turn: 3,
        asr: { p50: 40, p90: 40, p95: 40, p99: 40, min: 40, max: 40, num: 1 },
      },
    ]);
  });
});
