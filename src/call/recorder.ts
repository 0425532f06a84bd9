// Two-channel call recording (caller left, agent right) on the call clock, with silence where
// nobody spoke, at the call's media rate (8 kHz for a phone line: upsampling every call would
// cost more than the call itself; the recording route serves 16 kHz). Audio is spooled to raw
// files as the call goes, so an hour-long call costs disk, not memory; the WAV is assembled
// once at the end.
import { closeSync, mkdirSync, openSync, read, readSync, rmSync, write, writeSync } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import { dirname } from 'node:path';
import { Readable } from 'node:stream';
import { promisify } from 'node:util';
import { Resampler } from '../audio/resampler.ts';
import { INTERNAL_RATE } from '../transports/types.ts';

/** Seconds of audio held per channel before it goes to its spool file. */
const FLUSH_SECONDS = 2;
/** Frames interleaved per step of the WAV assembly: about 1 ms of work between yields. */
const ASSEMBLY_BLOCK = 16384;

const readAsync = promisify(read);
type FileIo = { kind: 'read' | 'write'; fd: number; bytes: Uint8Array; position: number };
const writeAsync = promisify(write);

class SpooledChannel {
  /** Audio not yet written, in one preallocated block: no copy or array per frame. */
  private readonly block: Int16Array;
  private pendingSamples = 0;
  /** Samples written to the spool file plus those pending. */
  length = 0;
  /** Open for the whole call (read back at the end): one write per flush, not open/write/close. */
  readonly fd: number;
  private closed = false;

  constructor(file: string, blockSamples: number) {
    this.block = new Int16Array(blockSamples);
    this.fd = openSync(file, 'w+');
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

  close(): void {
    if (this.closed) return;
    this.closed = true;
    closeSync(this.fd);
  }

  flush(): void {
    if (this.pendingSamples === 0) return;
    const flushed = this.length - this.pendingSamples;
    writeSync(this.fd, new Uint8Array(this.block.buffer, 0, this.pendingSamples * 2), 0, this.pendingSamples * 2, flushed * 2);
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
    for (let step = steps.next(); ; ) {
      if (step.done) return step.value;
      const io = step.value;
      step = steps.next(io.kind === 'read' ? readSync(io.fd, io.bytes, 0, io.bytes.length, io.position) : writeSync(io.fd, io.bytes, 0, io.bytes.length, io.position));
    }
  }

  /** finish() with its file I/O on libuv's threads: the event loop only interleaves, a block at a time. */
  async close(): Promise<number> {
    const steps = this.assemble();
    for (let step = steps.next(); ; ) {
      if (step.done) return step.value;
      const io = step.value;
      step = steps.next(io.kind === 'read' ? (await readAsync(io.fd, io.bytes, 0, io.bytes.length, io.position)).bytesRead : (await writeAsync(io.fd, io.bytes, 0, io.bytes.length, io.position)).bytesWritten);
    }
  }

  /** The WAV assembly as a sequence of reads and writes, so one loop can run them blocking and another not. */
  private *assemble(): Generator<FileIo, number, number> {
    if (this.finished) return 0;
    this.finished = true;
    const fds = [this.caller.fd, this.agent.fd];
    let out: number | null = null;
    try {
      this.caller.flush();
      this.agent.flush();
      const frames = Math.max(this.caller.length, this.agent.length);
      out = openSync(this.wavPath, 'w');
      yield { kind: 'write', fd: out, bytes: wavHeader(frames, 2, this.sampleRate), position: 0 };
      const left = new Int16Array(ASSEMBLY_BLOCK);
      const right = new Int16Array(ASSEMBLY_BLOCK);
      const interleaved = new Int16Array(ASSEMBLY_BLOCK * 2);
      for (let done = 0; done < frames; done += ASSEMBLY_BLOCK) {
        const n = Math.min(ASSEMBLY_BLOCK, frames - done);
        // A channel shorter than the call reads short: the rest of its block stays silent.
        left.fill(0);
        right.fill(0);
        yield { kind: 'read', fd: fds[0]!, bytes: new Uint8Array(left.buffer, 0, n * 2), position: done * 2 };
        yield { kind: 'read', fd: fds[1]!, bytes: new Uint8Array(right.buffer, 0, n * 2), position: done * 2 };
        for (let i = 0; i < n; i++) {
          interleaved[i * 2] = left[i]!;
          interleaved[i * 2 + 1] = right[i]!;
        }
        yield { kind: 'write', fd: out, bytes: new Uint8Array(interleaved.buffer, 0, n * 4), position: 44 + done * 4 };
      }
      return frames;
    } finally {
      if (out !== null) closeSync(out);
      this.discardSpools();
    }
  }

  /** Drops everything (opt-out of storage, or a call that never connected). */
  discard(): void {
    this.finished = true;
    this.discardSpools();
    rmSync(this.wavPath, { force: true });
  }

  private discardSpools(): void {
    for (const channel of [this.caller, this.agent]) channel.close();
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
