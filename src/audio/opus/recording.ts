// A call recording as Ogg Opus, encoded on request in a worker thread (the event loop keeps pacing
// calls) from the WAV at its own rate: Opus takes 8 and 16 kHz as they are.
import { open } from 'node:fs/promises';
import { Readable } from 'node:stream';
import { Worker } from 'node:worker_threads';
import { AudioError } from '../errors.ts';
import { readStereoWavLayout } from '../stereo-wav.ts';
import { OPUS_RATES, opusAvailable } from './codec.ts';
import type { FromOggWorker } from './recording-protocol.ts';

/** Encodings at once per process: each takes a core while it runs; more wait their turn. */
const CONCURRENT_ENCODINGS = 1;
let running = 0;
const waiting: (() => void)[] = [];

async function turn(): Promise<() => void> {
  if (running >= CONCURRENT_ENCODINGS) await new Promise<void>((resolve) => waiting.push(resolve));
  running++;
  let released = false;
  return () => {
    if (released) return;
    released = true;
    running--;
    waiting.shift()?.();
  };
}

/**
 * The recording at `path` as an Ogg Opus stream. Throws at once (before any byte) when the file is
 * missing (ENOENT), is not a recording, or Opus cannot load; a failure while encoding destroys the stream.
 */
export async function oggOpusRecording(path: string): Promise<Readable> {
  const file = await open(path, 'r');
  const layout = await readStereoWavLayout(file, path).finally(() => file.close());
  if (!(OPUS_RATES as readonly number[]).includes(layout.rate))
    throw new AudioError('AUDIO_UNSUPPORTED_RATE', `a ${layout.rate} Hz recording cannot be Opus`);
  if (!opusAvailable()) throw new AudioError('AUDIO_OPUS_UNAVAILABLE', 'the Opus addon (@discordjs/opus) did not load');
  const release = await turn();
  const out = new Readable({
    read() {},
    destroy(error, callback) {
      release();
      // Set up below before anything can destroy the stream.
      void worker.terminate();
      callback(error);
    },
  });
  const worker = new Worker(new URL('./recording-worker-entry.mjs', import.meta.url), {
    workerData: { path, rate: layout.rate, frames: layout.frames },
  });
  worker.on('message', (message: FromOggWorker) => {
    if (message.type === 'bytes')
      out.push(Buffer.from(message.bytes.buffer, message.bytes.byteOffset, message.bytes.byteLength));
    else if (message.type === 'done') {
      release();
      out.push(null);
    } else out.destroy(new Error(`Ogg Opus encoding failed: ${message.message}`));
  });
  worker.on('error', (error) => out.destroy(error));
  worker.on('exit', (code) => {
    release();
    if (!out.readableEnded && code !== 0) out.destroy(new Error(`the Ogg Opus worker exited with code ${code}`));
  });
  return out;
}
