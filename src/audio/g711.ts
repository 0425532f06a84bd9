// G.711 μ-law and A-law, bit-exact with the ITU-T G.191 reference coder (ulaw_compress,
// alaw_compress and their expanders). Table-driven: decoding is one lookup per byte, encoding
// one lookup per sample on the 14 (μ-law) or 13 (A-law) most significant bits the standard uses.

function muLawCompressReference(sample: number): number {
  // Negative samples use one's complement, as in G.191, so -1 maps next to +0.
  let magnitude = (sample < 0 ? ~sample : sample) >> 2;
  magnitude += 33;
  if (magnitude > 0x1fff) magnitude = 0x1fff;
  let segment = 1;
  for (let i = magnitude >> 6; i !== 0; i >>= 1) segment++;
  const high = 8 - segment;
  const low = 0x0f - ((magnitude >> segment) & 0x0f);
  let code = (high << 4) | low;
  if (sample >= 0) code |= 0x80;
  return code;
}

function muLawExpandReference(code: number): number {
  const sign = code < 0x80 ? -1 : 1;
  const inverted = ~code;
  const exponent = (inverted >> 4) & 0x07;
  const mantissa = inverted & 0x0f;
  const step = 4 << (exponent + 1);
  return sign * ((0x80 << exponent) + step * mantissa + step / 2 - 4 * 33);
}

function aLawCompressReference(sample: number): number {
  let ix = (sample < 0 ? ~sample : sample) >> 4;
  if (ix > 15) {
    let exponent = 1;
    while (ix > 16 + 15) {
      ix >>= 1;
      exponent++;
    }
    ix -= 16;
    ix += exponent << 4;
  }
  if (sample >= 0) ix |= 0x80;
  return ix ^ 0x55;
}

function aLawExpandReference(code: number): number {
  const ix = (code ^ 0x55) & 0x7f;
  const exponent = ix >> 4;
  let mantissa = ix & 0x0f;
  if (exponent > 0) mantissa += 16;
  mantissa = (mantissa << 4) + 8;
  if (exponent > 1) mantissa <<= exponent - 1;
  return code > 127 ? mantissa : -mantissa;
}

const MULAW_DECODE = new Int16Array(256);
const ALAW_DECODE = new Int16Array(256);
for (let code = 0; code < 256; code++) {
  MULAW_DECODE[code] = muLawExpandReference(code);
  ALAW_DECODE[code] = aLawExpandReference(code);
}

// Index by sample >> 2 (μ-law) or >> 3 (A-law), offset to be non-negative. Only those bits
// reach the reference coder, so the tables are exact for every 16-bit input.
const MULAW_ENCODE = new Uint8Array(1 << 14);
for (let i = 0; i < MULAW_ENCODE.length; i++) MULAW_ENCODE[i] = muLawCompressReference((i - (1 << 13)) << 2);
const ALAW_ENCODE = new Uint8Array(1 << 13);
for (let i = 0; i < ALAW_ENCODE.length; i++) ALAW_ENCODE[i] = aLawCompressReference((i - (1 << 12)) << 3);

export function muLawEncodeSample(sample: number): number {
  return MULAW_ENCODE[(sample >> 2) + 8192]!;
}

export function muLawDecodeSample(code: number): number {
  return MULAW_DECODE[code & 0xff]!;
}

export function aLawEncodeSample(sample: number): number {
  return ALAW_ENCODE[(sample >> 3) + 4096]!;
}

export function aLawDecodeSample(code: number): number {
  return ALAW_DECODE[code & 0xff]!;
}

/** PCM16 → μ-law bytes. Pass `out` (at least as long as `pcm`) to avoid an allocation. */
export function muLawEncode(pcm: Int16Array, out: Uint8Array = new Uint8Array(pcm.length)): Uint8Array {
  for (let i = 0; i < pcm.length; i++) out[i] = MULAW_ENCODE[(pcm[i]! >> 2) + 8192]!;
  return out.length === pcm.length ? out : out.subarray(0, pcm.length);
}

/** μ-law bytes → PCM16. Pass `out` (at least as long as `bytes`) to avoid an allocation. */
export function muLawDecode(bytes: Uint8Array, out: Int16Array = new Int16Array(bytes.length)): Int16Array {
  for (let i = 0; i < bytes.length; i++) out[i] = MULAW_DECODE[bytes[i]!]!;
  return out.length === bytes.length ? out : out.subarray(0, bytes.length);
}

/** PCM16 → A-law bytes. */
export function aLawEncode(pcm: Int16Array, out: Uint8Array = new Uint8Array(pcm.length)): Uint8Array {
  for (let i = 0; i < pcm.length; i++) out[i] = ALAW_ENCODE[(pcm[i]! >> 3) + 4096]!;
  return out.length === pcm.length ? out : out.subarray(0, pcm.length);
}

/** A-law bytes → PCM16. */
export function aLawDecode(bytes: Uint8Array, out: Int16Array = new Int16Array(bytes.length)): Int16Array {
  for (let i = 0; i < bytes.length; i++) out[i] = ALAW_DECODE[bytes[i]!]!;
  return out.length === bytes.length ? out : out.subarray(0, bytes.length);
}
