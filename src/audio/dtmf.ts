// Keypad tones (DTMF, ITU-T Q.23): made as in-band audio, so pressing keys works on any line,
// and found in audio with a Goertzel filter per tone, so a simulated phone can hear them.
import { FRAME_MS } from './pcm.ts';

const ROWS = [697, 770, 852, 941] as const;
const COLUMNS = [1209, 1336, 1477, 1633] as const;
const KEYS = ['123A', '456B', '789C', '*0#D'] as const;

/** Q.23: each key is one row and one column tone. */
export function dtmfFrequencies(key: string): readonly [number, number] | null {
  for (const [r, row] of KEYS.entries()) {
    const c = row.indexOf(key);
    if (c !== -1) return [ROWS[r]!, COLUMNS[c]!];
  }
  return null;
}

export const DTMF_DEFAULTS = {
  toneMs: 100,
  gapMs: 100,
  /**
   * Each tone's peak, of full scale: about −7 dBm0 per tone, inside the −4…−10 dBm0 Q.23 allows; the
   * pair peaks at 0.62 of full scale, so μ-law carries it without clipping.
   */
  level: 0.31,
  /** Rise and fall of each tone, so it starts and stops without a click. */
  rampMs: 3,
} as const;

/** The tones of `keys` (each a key of KEYS), tone then gap for every key, at `rate`. */
export function dtmfTones(keys: string, rate: number, options: { toneMs?: number; gapMs?: number } = {}): Int16Array {
  const toneMs = options.toneMs ?? DTMF_DEFAULTS.toneMs;
  const gapMs = options.gapMs ?? DTMF_DEFAULTS.gapMs;
  const toneSamples = Math.round((toneMs * rate) / 1000);
  const perKey = toneSamples + Math.round((gapMs * rate) / 1000);
  const out = new Int16Array(perKey * keys.length);
  const ramp = Math.max(1, Math.round((DTMF_DEFAULTS.rampMs * rate) / 1000));
  const peak = DTMF_DEFAULTS.level * 32767;
  for (const [k, key] of [...keys].entries()) {
    const pair = dtmfFrequencies(key);
    if (!pair) throw new RangeError(`not a keypad key: ${JSON.stringify(key)}`);
    const [low, high] = pair;
    for (let i = 0; i < toneSamples; i++) {
      const envelope = Math.min(1, i / ramp, (toneSamples - 1 - i) / ramp);
      const t = i / rate;
      out[k * perKey + i] = Math.round(
        peak * envelope * (Math.sin(2 * Math.PI * low * t) + Math.sin(2 * Math.PI * high * t)),
      );
    }
  }
  return out;
}

/** What a block must show to hold a key. */
const DETECT = {
  /** Share of the block's energy in the row and column tones together. */
  minToneShare: 0.6,
  /** Each of the two tones' share at least. */
  minEachShare: 0.15,
  /** The strongest row (column) tone over the next strongest: 6 dB. */
  minPeakRatio: 4,
  /** Row and column tones within 8 dB of each other (twist). */
  maxTwist: 6.3,
  /** Mean square below this (about −50 dBm0) is silence. */
  minMeanSquare: 100,
  /** Blocks a key must be held to count: 40 ms, the shortest tone Q.24 asks to be accepted. */
  minBlocks: 2,
} as const;

/** Power of `frequency` in `block` (Goertzel), scaled so a lone full-block sine of energy E gives E. */
function tonePower(block: Int16Array, frequency: number, rate: number): number {
  const coefficient = 2 * Math.cos((2 * Math.PI * frequency) / rate);
  let s1 = 0;
  let s2 = 0;
  for (let i = 0; i < block.length; i++) {
    const s0 = block[i]! + coefficient * s1 - s2;
    s2 = s1;
    s1 = s0;
  }
  return ((s1 * s1 + s2 * s2 - coefficient * s1 * s2) * 2) / block.length;
}

/** The key one 20 ms block holds, or null. */
export function dtmfKeyIn(block: Int16Array, rate: number): string | null {
  let energy = 0;
  for (let i = 0; i < block.length; i++) energy += block[i]! * block[i]!;
  if (energy / block.length < DETECT.minMeanSquare) return null;
  const strongest = (frequencies: readonly number[]) => {
    const powers = frequencies.map((f) => tonePower(block, f, rate));
    const order = [...powers.keys()].sort((a, b) => powers[b]! - powers[a]!);
    return { index: order[0]!, power: powers[order[0]!]!, next: powers[order[1]!]! };
  };
  const row = strongest(ROWS);
  const column = strongest(COLUMNS);
  const rowShare = row.power / energy;
  const columnShare = column.power / energy;
  if (
    rowShare + columnShare < DETECT.minToneShare ||
    rowShare < DETECT.minEachShare ||
    columnShare < DETECT.minEachShare
  )
    return null;
  if (row.power < DETECT.minPeakRatio * row.next || column.power < DETECT.minPeakRatio * column.next) return null;
  if (Math.max(row.power, column.power) > DETECT.maxTwist * Math.min(row.power, column.power)) return null;
  return KEYS[row.index]![column.index]!;
}

/**
 * Keys heard in a stream of audio: each reported once, after it has been held for 40 ms, and
 * again only after a break (a gap, or another key).
 */
export class DtmfDetector {
  private readonly blockSamples: number;
  private readonly pending: Int16Array;
  private filled = 0;
  private candidate: string | null = null;
  private held = 0;
  private reported = false;

  constructor(private readonly rate: number) {
    this.blockSamples = (rate * FRAME_MS) / 1000;
    this.pending = new Int16Array(this.blockSamples);
  }

  /** Audio in any length; returns the keys that became certain within it. */
  push(samples: Int16Array): string[] {
    const keys: string[] = [];
    let offset = 0;
    while (offset < samples.length) {
      const take = Math.min(this.blockSamples - this.filled, samples.length - offset);
      this.pending.set(samples.subarray(offset, offset + take), this.filled);
      this.filled += take;
      offset += take;
      if (this.filled < this.blockSamples) break;
      this.filled = 0;
      const key = this.block(dtmfKeyIn(this.pending, this.rate));
      if (key) keys.push(key);
    }
    return keys;
  }

  private block(key: string | null): string | null {
    if (key !== this.candidate) {
      this.candidate = key;
      this.held = key ? 1 : 0;
      this.reported = false;
      return null;
    }
    if (!key || this.reported) return null;
    this.held++;
    if (this.held < DETECT.minBlocks) return null;
    this.reported = true;
    return key;
  }
}
