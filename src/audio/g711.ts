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

// Base64 digit values, 255 where a character is not one.
const BASE64_VALUES = new Uint8Array(128).fill(255);
for (const [i, c] of [...'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/'].entries()) BASE64_VALUES[c.charCodeAt(0)] = i;

function base64Digit(text: string, at: number): number {
  const code = text.charCodeAt(at);
  const value = code < 128 ? BASE64_VALUES[code]! : 255;
  if (value === 255) throw new RangeError(`not base64 at ${at}`);
  return value;
}

/** Bytes that base64 `text` holds (as Buffer.from decodes it: trailing '=' and a lone last digit add none). */
export function base64Bytes(text: string): number {
  let length = text.length;
  while (length > 0 && text.charCodeAt(length - 1) === 61) length--; // '='
  const rest = length % 4;
  return Math.floor(length / 4) * 3 + (rest === 2 ? 1 : rest === 3 ? 2 : 0);
}

function g711DecodeBase64(table: Int16Array, text: string, out: Int16Array): Int16Array {
  const bytes = base64Bytes(text);
  const full = Math.floor(bytes / 3);
  let o = 0;
  let i = 0;
  for (let g = 0; g < full; g++, i += 4) {
    const v = (base64Digit(text, i) << 18) | (base64Digit(text, i + 1) << 12) | (base64Digit(text, i + 2) << 6) | base64Digit(text, i + 3);
    out[o++] = table[v >> 16]!;
    out[o++] = table[(v >> 8) & 0xff]!;
    out[o++] = table[v & 0xff]!;
  }
  if (o < bytes) {
    const v = (base64Digit(text, i) << 18) | (base64Digit(text, i + 1) << 12) | (bytes - o === 2 ? base64Digit(text, i + 2) << 6 : 0);
    out[o++] = table[v >> 16]!;
    if (o < bytes) out[o++] = table[(v >> 8) & 0xff]!;
  }
  return out.length === bytes ? out : out.subarray(0, bytes);
}

/**
 * Base64 μ-law (a Twilio media payload) → PCM16 in one pass, with no byte buffer in between.
 * Same samples as muLawDecode(Buffer.from(text, 'base64')); throws RangeError on a non-base64 character.
 */
export function muLawDecodeBase64(text: string, out: Int16Array = new Int16Array(base64Bytes(text))): Int16Array {
  return g711DecodeBase64(MULAW_DECODE, text, out);
}

/** Base64 A-law → PCM16, as muLawDecodeBase64. */
export function aLawDecodeBase64(text: string, out: Int16Array = new Int16Array(base64Bytes(text))): Int16Array {
  return g711DecodeBase64(ALAW_DECODE, text, out);
}
