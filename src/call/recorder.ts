// Two-channel call recording (caller left, agent right) on the call clock, with silence where
// nobody spoke, at the call's media rate (8 kHz for a phone line: upsampling every call would
// cost more than the call itself; the recording route serves 16 kHz). The WAV is written as the
// call goes, interleaved a block at a time, so an hour-long call costs disk, not memory, and
// ending a call is one last block and the header: no spool files to write, read back and delete
// (file operations are dear here: an open or a write costs more than a call's frame).
import { closeSync, fstatSync, ftruncateSync, mkdirSync, openSync, readSync, rmSync, writeSync } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import { dirname } from 'node:path';
import { Readable } from 'node:stream';
import { Resampler } from '../audio/resampler.ts';
import { INTERNAL_SAMPLE_RATE } from '../audio/pcm.ts';
import { readStereoWavLayout } from '../audio/stereo-wav.ts';

/** Seconds of both channels written per block: one write a second per call. */
const BLOCK_SECONDS = 1;
/**
 * How far one channel may run ahead of the other before the one behind is taken as silent up to
 * that distance. Agent audio is placed when it plays, never before the present, and the caller's
 * audio clock runs at most its first frame's delay ahead of the present, so neither receives
 * audio this far back.
 */
const SKEW_SECONDS = 2;

/** Interleaving scratch shared by every recorder: writes are synchronous on the one JS thread. */
let interleaved = new Int16Array(0);

class Channel {
  /** Samples from the recorder's `written` on; grows only if the other channel stalls. */
  samples: Int16Array;
  /** Samples placed, counted from the call start. */
  length = 0;

  constructor(capacity: number) {
    this.samples = new Int16Array(capacity);
  }

  /** Places `frame` at sample `at`, silence in any gap; what is already placed or written is kept. */
  write(frame: Int16Array, at: number, written: number): void {
    if (at > this.length) this.pad(at, written);
    const skip = this.length - at;
    if (skip >= frame.length) return;
    this.ensure(this.length + frame.length - skip - written);
    this.samples.set(skip > 0 ? frame.subarray(skip) : frame, this.length - written);
    this.length += frame.length - skip;
  }

  /** Silence up to sample `to`. */
  pad(to: number, written: number): void {
    if (to <= this.length) return;
    this.ensure(to - written);
    this.samples.fill(0, this.length - written, to - written);
    this.length = to;
  }

  private ensure(size: number): void {
    if (size <= this.samples.length) return;
    const grown = new Int16Array(Math.max(size, this.samples.length * 2));
    grown.set(this.samples);
    this.samples = grown;
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
  private readonly caller: Channel;
  private readonly agent: Channel;
  /** Frames (sample pairs) in the file; both channels hold what comes after. */
  private written = 0;
  private fd: number | null = null;
  private readonly block: number;
  private readonly skew: number;
  private finished = false;

  /** `sampleRate`: the rate of the frames handed in, and of the WAV. */
  constructor(
    private readonly wavPath: string,
    readonly sampleRate: number = INTERNAL_SAMPLE_RATE,
  ) {
    mkdirSync(dirname(wavPath), { recursive: true, mode: 0o700 });
    this.block = sampleRate * BLOCK_SECONDS;
    this.skew = sampleRate * SKEW_SECONDS;
    this.caller = new Channel(this.block + this.skew);
    this.agent = new Channel(this.block + this.skew);
  }

  private at(offsetMs: number): number {
    return Math.max(0, Math.round((offsetMs * this.sampleRate) / 1000));
  }

  /** Caller audio at `offsetMs` from the call start (on the inbound audio clock). */
  callerAudio(frame: Int16Array, offsetMs: number): void {
    if (this.finished) return;
    this.caller.write(frame, this.at(offsetMs), this.written);
    this.maybeWrite();
  }

  /** Agent audio at `offsetMs` from the call start (when it plays). */
  agentAudio(frame: Int16Array, offsetMs: number): void {
    if (this.finished) return;
    this.agent.write(frame, this.at(offsetMs), this.written);
    this.maybeWrite();
  }

  /** Agent audio after `offsetMs` was cleared before it played. */
  agentCleared(offsetMs: number): void {
    const at = this.at(offsetMs);
    if (at >= this.written && at < this.agent.length) this.agent.length = at;
  }

  /** Writes what is left and the header (2 channels, PCM16, at the recorder's rate); returns the length in samples. */
  finish(): number {
    if (this.finished) return 0;
    this.finished = true;
    const frames = Math.max(this.caller.length, this.agent.length);
    this.caller.pad(frames, this.written);
    this.agent.pad(frames, this.written);
    try {
      this.writeThrough(frames);
      writeSync(this.file(), wavHeader(frames, 2, this.sampleRate), 0, 44, 0);
    } finally {
      if (this.fd !== null) closeSync(this.fd);
      this.fd = null;
    }
    return frames;
  }

  /** finish(), for callers that await: what is left is at most a few seconds, written at once. */
  async close(): Promise<number> {
    return this.finish();
  }

  /** Drops everything (opt-out of storage, or a call that never connected). */
  discard(): void {
    this.finished = true;
    if (this.fd !== null) closeSync(this.fd);
    this.fd = null;
    rmSync(this.wavPath, { force: true });
  }

  /** A block is written once both channels hold it, the one behind taken as silent past the skew. */
  private maybeWrite(): void {
    const ahead = Math.max(this.caller.length, this.agent.length);
    const upTo = Math.max(Math.min(this.caller.length, this.agent.length), ahead - this.skew);
    if (upTo - this.written < this.block) return;
    this.caller.pad(upTo, this.written);
    this.agent.pad(upTo, this.written);
    this.writeThrough(upTo);
  }

  /** Interleaves both channels up to frame `upTo` into the file, and keeps what comes after. */
  private writeThrough(upTo: number): void {
    const n = upTo - this.written;
    if (n <= 0) return;
    if (interleaved.length < n * 2) interleaved = new Int16Array(n * 2);
    const left = this.caller.samples;
    const right = this.agent.samples;
    const out = interleaved;
    for (let i = 0; i < n; i++) {
      out[i * 2] = left[i]!;
      out[i * 2 + 1] = right[i]!;
    }
    writeSync(this.file(), new Uint8Array(out.buffer, 0, n * 4), 0, n * 4, 44 + this.written * 4);
    for (const channel of [this.caller, this.agent]) channel.samples.copyWithin(0, n, channel.length - this.written);
    this.written = upTo;
  }

  /** The WAV, opened at its first block: a short call opens it once, at its end. */
  private file(): number {
    if (this.fd === null) {
      this.fd = openSync(this.wavPath, 'w', 0o600);
      // A header from the start, its sizes fixed at the end: a file the process died writing still
      // says what it holds (repairRecording puts its sizes right).
      writeSync(this.fd, wavHeader(0, 2, this.sampleRate), 0, 44, 0);
    }
    return this.fd;
  }
}

/**
 * After a crash: a recording the process died writing gets the sizes of what it holds, so it is a
 * valid WAV again. false when there is no usable file (none, or not one of ours), which is removed.
 */
export function repairRecording(path: string): boolean {
  let fd: number;
  try {
    fd = openSync(path, 'r+');
  } catch {
    return false;
  }
  let usable: boolean;
  try {
    const header = Buffer.alloc(44);
    const read = readSync(fd, header, 0, 44, 0);
    const size = fstatSync(fd).size;
    const channels = header.readUInt16LE(22);
    usable =
      read === 44 &&
      header.toString('ascii', 0, 4) === 'RIFF' &&
      header.toString('ascii', 8, 12) === 'WAVE' &&
      channels === 2 &&
      header.readUInt16LE(34) === 16;
    if (usable) {
      const frames = Math.floor((size - 44) / (channels * 2));
      writeSync(fd, wavHeader(frames, channels, header.readUInt32LE(24)), 0, 44, 0);
      ftruncateSync(fd, 44 + frames * channels * 2);
    }
  } finally {
    closeSync(fd);
  }
  if (!usable) rmSync(path, { force: true });
  return usable;
}

/** Rate recordings are served at, whatever rate the call's media had. */
export const SERVED_RECORDING_RATE = INTERNAL_SAMPLE_RATE;
const SERVE_BLOCK = 4096;

/**
 * A recording as the API serves it: 16 kHz, 2 channels. A WAV kept at a lower media rate is
 * upsampled as it streams out, block by block, so the cost falls on the rare download and not on
 * every call. Throws when the file is missing or is not one of ours.
 */
export async function openRecording(path: string): Promise<{ bytes: number; stream: Readable }> {
  const file = await open(path, 'r');
  let keep = false;
  try {
    const { rate, frames, bytes } = await readStereoWavLayout(file, path);
    if (rate === SERVED_RECORDING_RATE) {
      keep = true;
      return { bytes, stream: file.createReadStream({ start: 0 }) };
    }
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
