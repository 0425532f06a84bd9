// Reading an Ogg Opus file back for tests: prism-media's demuxer (an Ogg reader we did not write)
// and libopus, the decoder's pre-skip and the last page's end trimmed as RFC 7845 says.
import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import prism from 'prism-media';
import { OpusCodec, OPUS_PRE_SKIP } from '../../src/audio/opus/index.ts';
import { rms } from '../../src/audio/pcm.ts';

export async function decodeOggOpus(
  file: Buffer,
  rate = 16000,
): Promise<{ left: Int16Array; right: Int16Array; head: Buffer; lastGranule: number }> {
  const codec = new OpusCodec({ rate, channels: 2, bitrate: 32000, complexity: 5 });
  const pcm: Int16Array[] = [];
  let head = Buffer.alloc(0);
  const demuxer = new prism.opus.OggDemuxer();
  demuxer.on('head', (h: Buffer) => (head = Buffer.from(h)));
  await pipeline(
    Readable.from([file]),
    demuxer,
    new Writable({
      objectMode: true,
      write(packet: Buffer, _encoding, done) {
        pcm.push(codec.decode(packet));
        done();
      },
    }),
  );
  // The last page's granule position: where the audio ends, in 48 kHz samples from the stream's start.
  const lastPage = file.lastIndexOf('OggS');
  const lastGranule = Number(file.readBigUInt64LE(lastPage + 6));
  const all = Int16Array.from(pcm.flatMap((p) => Array.from(p)));
  const skip = (OPUS_PRE_SKIP * rate) / 48000;
  const end = Math.round((lastGranule * rate) / 48000);
  const frames = all.length / 2;
  const left = new Int16Array(Math.max(0, Math.min(end, frames) - skip));
  const right = new Int16Array(left.length);
  for (let i = 0; i < left.length; i++) {
    left[i] = all[(i + skip) * 2]!;
    right[i] = all[(i + skip) * 2 + 1]!;
  }
  return { left, right, head, lastGranule };
}

/** Pearson correlation of two signals' 20 ms loudness envelopes: 1 when they are loud and quiet together. */
export function envelopeCorrelation(a: Int16Array, b: Int16Array, block = 320): number {
  const n = Math.floor(Math.min(a.length, b.length) / block);
  const ea: number[] = [];
  const eb: number[] = [];
  for (let i = 0; i < n; i++) {
    ea.push(rms(a.subarray(i * block, (i + 1) * block)));
    eb.push(rms(b.subarray(i * block, (i + 1) * block)));
  }
  const mean = (x: number[]) => x.reduce((s, v) => s + v, 0) / Math.max(1, x.length);
  const ma = mean(ea);
  const mb = mean(eb);
  let num = 0;
  let da = 0;
  let db = 0;
  for (let i = 0; i < n; i++) {
    num += (ea[i]! - ma) * (eb[i]! - mb);
    da += (ea[i]! - ma) ** 2;
    db += (eb[i]! - mb) ** 2;
  }
  return num / Math.sqrt(da * db || 1);
}
