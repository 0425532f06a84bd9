import type { PcmChunk } from '../../../src/speech/types.ts';

export async function collect(chunks: AsyncIterable<PcmChunk>): Promise<PcmChunk[]> {
  const out: PcmChunk[] = [];
  for await (const chunk of chunks) out.push(chunk);
  return out;
}

export function durationOf(chunks: PcmChunk[]): number {
  return chunks.reduce((sum, c) => sum + c.samples.length / c.sampleRate, 0);
}

export function joined(chunks: PcmChunk[]): Int16Array {
  const out = new Int16Array(chunks.reduce((n, c) => n + c.samples.length, 0));
  let offset = 0;
  for (const c of chunks) {
    out.set(c.samples, offset);
    offset += c.samples.length;
  }
  return out;
}
