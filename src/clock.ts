// Time and randomness come in through these, so tests can pin them.
import { randomBytes } from 'node:crypto';

export interface Clock {
  /** Unix epoch milliseconds. */
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

export type RandomHex = (bytes: number) => string;

export const cryptoRandomHex: RandomHex = (bytes) => randomBytes(bytes).toString('hex');

export function newId(prefix: string, random: RandomHex): string {
  return `${prefix}_${random(16)}`;
}
