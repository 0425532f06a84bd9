// File formats sphinxtrain needs but the Debian pocketsphinx model does not ship. The model's
// mixture weights exist only as pocketsphinx's quantised `sendump`; sphinxtrain's bw reads a
// float `mixture_weights` file (the "s3" binary format of means/variances). Only Node built-ins.
import { readFileSync, writeFileSync } from 'node:fs';

/** Mixture weights as probabilities, indexed [feature][codeword][senone]. */
export interface MixtureWeights {
  nFeat: number;
  nCodeword: number;
  nSenone: number;
  /** nFeat * nCodeword * nSenone values, feature-major, then codeword, then senone. */
  prob: Float32Array;
}

// pocketsphinx keeps each weight as an 8-bit -log(p) in units of log base 1.0001 shifted right by
// 10 bits (SENSCR_SHIFT), i.e. p = 1.0001^(-1024 q); 255 stands for "too small to matter".
const LOG_BASE = 1.0001;
const SENSCR_SHIFT = 10;

/**
 * Reads a `sendump`: a header of length-prefixed strings ended by a zero length (it names
 * cluster_count, feature_count …), then int32 #codewords and #senones, then for each feature
 * and each codeword one unsigned byte per senone.
 */
export function readSendump(path: string): MixtureWeights {
  const buf = readFileSync(path);
  let little = true;
  let off = 0;
  const int32 = (): number => {
    const v = little ? buf.readInt32LE(off) : buf.readInt32BE(off);
    off += 4;
    return v;
  };
  let n = int32();
  if (n < 1 || n > 999) {
    little = false;
    off = 0;
    n = int32();
  }
  const header: string[] = [];
  while (n !== 0) {
    header.push(buf.toString('latin1', off, off + n - 1));
    off += n;
    n = int32();
  }
  const attr = (name: string): number | undefined => {
    const line = header.find((l) => l.startsWith(`${name} `));
    return line === undefined ? undefined : Number(line.slice(name.length + 1));
  };
  if ((attr('cluster_count') ?? 0) !== 0) throw new Error(`${path}: clustered (4-bit) sendump is not supported`);
  const nFeat = attr('feature_count') ?? 4;
  const nCodeword = int32();
  const nSenone = int32();
  const expected = off + nFeat * nCodeword * nSenone;
  if (buf.length !== expected)
    throw new Error(`${path}: ${buf.length} bytes, expected ${expected} for ${nFeat}x${nCodeword}x${nSenone}`);
  const step = Math.log(LOG_BASE) * (1 << SENSCR_SHIFT);
  const table = Float64Array.from({ length: 256 }, (_, q) => Math.exp(-q * step));
  const prob = new Float32Array(nFeat * nCodeword * nSenone);
  for (let i = 0; i < prob.length; i++) prob[i] = table[buf[off + i]!]!;
  return { nFeat, nCodeword, nSenone, prob };
}

/**
 * Writes sphinxtrain's `mixture_weights`: "s3" header, byte-order word, then int32 dims
 * (senones, features, codewords), int32 count and float32 weights [senone][feature][codeword],
 * each senone's weights per feature normalised to sum 1. No checksum (the header says so by
 * omitting chksum0, which both sphinxbase and sphinxtrain accept).
 */
export function writeMixtureWeights(path: string, w: MixtureWeights): void {
  const { nFeat, nCodeword, nSenone, prob } = w;
  const head = Buffer.from('s3\nversion 1.0\nendhdr\n', 'latin1');
  const body = Buffer.alloc(4 * 5 + 4 * nSenone * nFeat * nCodeword);
  body.writeUInt32LE(0x11223344, 0);
  body.writeInt32LE(nSenone, 4);
  body.writeInt32LE(nFeat, 8);
  body.writeInt32LE(nCodeword, 12);
  body.writeInt32LE(nSenone * nFeat * nCodeword, 16);
  let o = 20;
  for (let s = 0; s < nSenone; s++) {
    for (let f = 0; f < nFeat; f++) {
      let sum = 0;
      for (let c = 0; c < nCodeword; c++) sum += prob[(f * nCodeword + c) * nSenone + s]!;
      for (let c = 0; c < nCodeword; c++) {
        body.writeFloatLE(prob[(f * nCodeword + c) * nSenone + s]! / sum, o);
        o += 4;
      }
    }
  }
  writeFileSync(path, Buffer.concat([head, body]));
}
