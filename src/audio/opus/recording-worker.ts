// Encodes one two-channel PCM16 WAV to Ogg Opus off the event loop (a ten-minute call is seconds
// of libopus work) and posts the file's bytes back a page at a time. PCM in, packets out through
// prism-media's Opus encoder stream, pages from OggOpusMuxer.
import { createReadStream } from 'node:fs';
import { Readable, Transform, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { parentPort, workerData } from 'node:worker_threads';
import prism from 'prism-media';
import { z } from 'zod';
import { OGG_RECORDING_BITRATE, type FromOggWorker } from './recording-protocol.ts';
import { OggOpusMuxer, OPUS_PRE_SKIP } from './ogg.ts';
import { OPUS_FRAME_MS } from './codec.ts';

const Job = z.object({ path: z.string(), rate: z.int().positive(), frames: z.int().nonnegative() });

/** Zeros after the audio: libopus's delay, then up to a whole frame, so the last real sample is encoded. */
function padded(rate: number, frameSamples: number, frames: number): Transform {
  return new Transform({
    transform: (chunk: Buffer, _encoding, done) => done(null, chunk),
    flush(done) {
      const delay = Math.ceil((OPUS_PRE_SKIP * rate) / 48000);
      const total = Math.ceil((frames + delay) / frameSamples) * frameSamples;
      done(null, Buffer.alloc((total - frames) * 4));
    },
  });
}

async function encode(): Promise<void> {
  const job = Job.parse(workerData);
  const frameSamples = (job.rate * OPUS_FRAME_MS) / 1000;
  const encoder = new prism.opus.Encoder({ rate: job.rate, channels: 2, frameSize: frameSamples });
  encoder.setBitrate(OGG_RECORDING_BITRATE);
  const pcm: Readable =
    job.frames > 0 ? createReadStream(job.path, { start: 44, end: 44 + job.frames * 4 - 1 }) : Readable.from([]);
  const post = new Writable({
    write(page: Buffer, _encoding, done) {
      const message: FromOggWorker = { type: 'bytes', bytes: page };
      parentPort?.postMessage(message);
      done();
    },
  });
  await pipeline(
    pcm,
    padded(job.rate, frameSamples, job.frames),
    encoder,
    new OggOpusMuxer({ channels: 2, inputRate: job.rate, inputSamples: job.frames }),
    post,
  );
  const done: FromOggWorker = { type: 'done' };
  parentPort?.postMessage(done);
}

encode().catch((error: unknown) => {
  const failed: FromOggWorker = { type: 'error', message: (error as Error).message };
  parentPort?.postMessage(failed);
});
