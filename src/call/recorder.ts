// Two-channel call recording (caller left, agent right) on the call clock, with silence where
// nobody spoke, at the call's media rate (8 kHz for a phone line: upsampling every call would
// cost more than the call itself; the recording route serves 16 kHz). Audio is spooled to raw
// files as the call goes, so an hour-long call costs disk, not memory; the WAV is assembled
// once at the end.
import { appendFileSync, closeSync, mkdirSync, openSync, readSync, rmSync, writeSync } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import { dirname } from 'node:path';
import { Readable } from 'node:stream';
import { Resampler } from '../audio/resampler.ts';
import { INTERNAL_RATE } from '../transports/types.ts';

/** Seconds of audio held per channel before it goes to its spool file. */
const FLUSH_SECONDS = 2;
/** Frames interleaved per step of the WAV assembly: about 1 ms of work between yields. */
const ASSEMBLY_BLOCK = 16384;

class SpooledChannel {
  /** Audio not yet written, in one preallocated block: no copy or array per frame. */
  private readonly block: Int16Array;
  private pendingSamples = 0;
  /** Samples written to the spool file plus those pending. */
  length = 0;

  constructor(
    private readonly file: string,
    blockSamples: number,
  ) {
    this.block = new Int16Array(blockSamples);
    appendFileSync(file, Buffer.alloc(0));
  }

  /** Places `samples` at sample index `at`, filling any gap with silence; never rewrites the past. */
  write(samples: Int16Array, at = this.length): void {
    if (at > this.length) this.push(null, at - this.length);
    const skip = Math.max(0, this.length - at);
    if (skip < samples.length) this.push(skip === 0 ? samples : samples.subarray(skip), samples.length - skip);
  }

  /** Drops pending audio from sample `at` on (audio that was sent but never played). */
  truncate(at: number): void {
    const flushed = this.length - this.pendingSamples;
    if (at >= this.length || at < flushed) return;
    this.pendingSamples = at - flushed;
    this.length = at;
  }

  flush(): void {
    if (this.pendingSamples === 0) return;
    appendFileSync(this.file, new Uint8Array(this.block.buffer, 0, this.pendingSamples * 2));
    this.pendingSamples = 0;
  }

  /** Appends `count` samples of `samples`, or of silence when null, flushing whenever the block fills. */
  private push(samples: Int16Array | null, count: number): void {
    let done = 0;
    while (done < count) {
      const n = Math.min(count - done, this.block.length - this.pendingSamples);
      if (samples) this.block.set(done === 0 && n === samples.length ? samples : samples.subarray(done, done + n), this.pendingSamples);
      else this.block.fill(0, this.pendingSamples, this.pendingSamples + n);
      this.pendingSamples += n;
      this.length += n;
      done += n;
      if (this.pendingSamples === this.block.length) this.flush();
    }
  }
}

export function wavHeader(frames: number, channels: number, rate: number): Buffer {
  const dataBytes = frames * channels * 2;
  const h = Buffer.alloc(44);
  h.write('RIFF', 0, 'ascii');
  h.writeUInt32LE(36 + dataBytes, 4);
  h.write('WAVE', 8, 'ascii');
  h.write('fmt ', 12, 'ascii');
  h.writeUInt32LE(16, 16);
  h.writeUInt16LE(1, 20); // PCM
  h.writeUInt16LE(channels, 22);
  h.writeUInt32LE(rate, 24);
  h.writeUInt32LE(rate * channels * 2, 28);
  h.writeUInt16LE(channels * 2, 32);
  h.writeUInt16LE(16, 34);
  h.write('data', 36, 'ascii');
  h.writeUInt32LE(dataBytes, 40);
  return h;
}

export class CallRecorder {
  private readonly caller: SpooledChannel;
  private readonly agent: SpooledChannel;
  private finished = false;

  /** `sampleRate`: the rate of the frames handed in, and of the WAV. */
  constructor(
    private readonly wavPath: string,
    readonly sampleRate: number = INTERNAL_RATE,
  ) {
    mkdirSync(dirname(wavPath), { recursive: true });
    this.caller = new SpooledChannel(`${wavPath}.caller.raw`, sampleRate * FLUSH_SECONDS);
    this.agent = new SpooledChannel(`${wavPath}.agent.raw`, sampleRate * FLUSH_SECONDS);
  }

  private at(offsetMs: number): number {
    return Math.max(0, Math.round((offsetMs * this.sampleRate) / 1000));
  }

  /** Caller audio at `offsetMs` from the call start (on the inbound audio clock). */
  callerAudio(frame: Int16Array, offsetMs: number): void {
    this.caller.write(frame, this.at(offsetMs));
  }

  /** Agent audio at `offsetMs` from the call start (when it plays). */
  agentAudio(frame: Int16Array, offsetMs: number): void {
    this.agent.write(frame, this.at(offsetMs));
  }

  /** Agent audio after `offsetMs` was cleared before it played. */
  agentCleared(offsetMs: number): void {
    this.agent.truncate(this.at(offsetMs));
  }

  /** Writes the WAV (2 channels, PCM16, at the recorder's rate) and removes the spools; returns its length in samples. */
  finish(): number {
    const steps = this.assemble();
    for (;;) {
      const step = steps.next();
      if (step.done) return step.value;
    }
  }

  /** finish(), giving the event loop back between blocks: other calls' frames keep their pace. */
  async close(): Promise<number> {
    const steps = this.assemble();
    for (;;) {
      const step = steps.next();
      if (step.done) return step.value;
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
  }

  /** The WAV assembly, one block per step. */
  private *assemble(): Generator<void, number> {
    if (this.finished) return 0;
    this.finished = true;
    this.caller.flush();
    this.agent.flush();
    const frames = Math.max(this.caller.length, this.agent.length);
    const out = openSync(this.wavPath, 'w');
    const inputs = [openSync(`${this.wavPath}.caller.raw`, 'r'), openSync(`${this.wavPath}.agent.raw`, 'r')];
    try {
      writeSync(out, wavHeader(frames, 2, this.sampleRate));
      const left = new Int16Array(ASSEMBLY_BLOCK);
      const right = new Int16Array(ASSEMBLY_BLOCK);
      const interleaved = new Int16Array(ASSEMBLY_BLOCK * 2);
      for (let done = 0; done < frames; done += ASSEMBLY_BLOCK) {
        const n = Math.min(ASSEMBLY_BLOCK, frames - done);
        left.fill(0);
        right.fill(0);
        readSync(inputs[0]!, new Uint8Array(left.buffer), 0, n * 2, done * 2);
        readSync(inputs[1]!, new Uint8Array(right.buffer), 0, n * 2, done * 2);
        for (let i = 0; i < n; i++) {
          interleaved[i * 2] = left[i]!;
          interleaved[i * 2 + 1] = right[i]!;
        }
        writeSync(out, new Uint8Array(interleaved.buffer, 0, n * 4));
        if (done + n < frames) yield;
      }
    } finally {
      closeSync(out);
      for (const fd of inputs) closeSync(fd);
      this.discardSpools();
    }
    return frames;
  }

  /** Drops everything (opt-out of storage, or a call that never connected). */
  discard(): void {
    this.finished = true;
    this.discardSpools();
    rmSync(this.wavPath, { force: true });
  }

  private discardSpools(): void {
    rmSync(`${this.wavPath}.caller.raw`, { force: true });
    rmSync(`${this.wavPath}.agent.raw`, { force: true });
  }
}

/** Rate recordings are served at, whatever rate the call's media had. */
export const SERVED_RECORDING_RATE = INTERNAL_RATE;
const SERVE_BLOCK = 4096;

/**
 * A recording as the API serves it: 16 kHz, 2 channels. A WAV kept at a lower media rate is
 * upsampled as it streams out, block by block, so the cost falls on the rare download and not on
 * every call. Throws when the file is missing or is not one of ours.
 */
export async function openRecording(path: string): Promise<{ bytes: number; stream: Readable }> {
  const file = await open(path, 'r');
  const header = Buffer.alloc(44);
  let keep = false;
  try {
    await file.read(header, 0, 44, 0);
    if (header.toString('ascii', 0, 4) !== 'RIFF' || header.readUInt16LE(22) !== 2 || header.readUInt16LE(34) !== 16) throw new Error(`${path} is not a 2-channel PCM16 recording`);
    const rate = header.readUInt32LE(24);
    const size = (await file.stat()).size;
    if (rate === SERVED_RECORDING_RATE) {
      keep = true;
      return { bytes: size, stream: file.createReadStream({ start: 0 }) };
    }
    // A file cut short (the process died while writing it) serves what it holds.
    const frames = Math.min(header.readUInt32LE(40), size - 44) >> 2;
    const outFrames = Math.ceil((frames * SERVED_RECORDING_RATE) / rate);
    keep = true;
    return { bytes: 44 + outFrames * 4, stream: Readable.from(upsampled(file, frames, rate, outFrames)) };
  } finally {
    if (!keep) await file.close();
  }
}

async function* upsampled(file: FileHandle, frames: number, rate: number, outFrames: number): AsyncGenerator<Buffer> {
  try {
    yield wavHeader(outFrames, 2, SERVED_RECORDING_RATE);
    const channels = [new Resampler(rate, SERVED_RECORDING_RATE), new Resampler(rate, SERVED_RECORDING_RATE)] as const;
    const raw = Buffer.alloc(SERVE_BLOCK * 4);
    const left = new Int16Array(SERVE_BLOCK);
    const right = new Int16Array(SERVE_BLOCK);
    let sent = 0;
    const interleave = (a: Int16Array, b: Int16Array): Buffer => {
      const n = Math.min(a.length, b.length, outFrames - sent);
      const out = new Int16Array(n * 2);
      for (let i = 0; i < n; i++) {
        out[i * 2] = a[i]!;
        out[i * 2 + 1] = b[i]!;
      }
      sent += n;
      return Buffer.from(out.buffer, 0, n * 4);
    };
    for (let done = 0; done < frames; done += SERVE_BLOCK) {
      const n = Math.min(SERVE_BLOCK, frames - done);
      await file.read(raw, 0, n * 4, 44 + done * 4);
      for (let i = 0; i < n; i++) {
        left[i] = raw.readInt16LE(i * 4);
        right[i] = raw.readInt16LE(i * 4 + 2);
      }
      yield interleave(channels[0].push(left.subarray(0, n)), channels[1].push(right.subarray(0, n)));
    }
    const tail = interleave(channels[0].flush(), channels[1].flush());
    if (tail.length > 0) yield tail;
  } finally {
    await file.close();
  }
}
