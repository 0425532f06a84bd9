import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CARRIERS } from '../../src/carriers/registry.ts';
import { SCRIPTS } from './conformance.ts';
import { CONFORMANCE_GROUPS, DRIVERS } from './drivers.ts';

const e2e = join(import.meta.dirname, '..', 'e2e');
const fileOf = (group: string) =>
  join(e2e, `carrier-conformance-${group.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}.test.ts`);

describe('the carrier conformance drivers', () => {
  it('every registered carrier has a conformance driver, and every driver a registered carrier', () => {
    expect(DRIVERS.map((d) => d.carrier).sort()).toEqual(CARRIERS.map((c) => c.name).sort());
    expect(Object.keys(SCRIPTS).length).toBeGreaterThan(0);
    // A carrier that leaves cases to the one whose code it runs names a driver that runs them all.
    for (const driver of DRIVERS.filter((d) => d.sharesCallCodeWith !== undefined))
      expect(DRIVERS.find((d) => d.carrier === driver.sharesCallCodeWith)?.sharesCallCodeWith).toBeUndefined();
  });

  it('every driver is in exactly one conformance file, with the driver whose code it runs', () => {
    const grouped = Object.values(CONFORMANCE_GROUPS).flatMap((group) => group.map((d) => d.carrier));
    expect([...grouped].sort()).toEqual(DRIVERS.map((d) => d.carrier).sort());
    for (const group of Object.values(CONFORMANCE_GROUPS))
      for (const driver of group.filter((d) => d.sharesCallCodeWith !== undefined))
        expect(group.map((d) => d.carrier)).toContain(driver.sharesCallCodeWith);
    for (const group of Object.keys(CONFORMANCE_GROUPS)) expect(existsSync(fileOf(group)), fileOf(group)).toBe(true);
  });
});
