// Two-channel call recording (caller left, agent right) on the call clock, with silence where
// nobody spoke. Audio is spooled to raw files as the call goes, so an hour-long call costs
// disk, not memory; the WAV is assembled once at the end.
import { appendFileSync, closeSync, mkdirSync, openSync, readSync, rmSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';
import { INTERNAL_RATE } from '../transports/types.ts';

const FLUSH_SAMPLES = INTERNAL_RATE * 2;

class SpooledChannel {
  private pending: Int16Array[] = [];
  private pendingSamples = 0;
  /** Samples written to the spool file plus those pending. */
  length = 0;

  constructor(private readonly file: string) {
    appendFileSync(file, Buffer.alloc(0));
  }

  /** Places `samples` at sample index `at`, filling any gap with silence; never rewrites the past. */
  write(samples: Int16Array, at = this.length): void {
    if (at > this.length) this.push(new Int16Array(at - this.length));
    const skip = Math.max(0, this.length - at);
    if (skip < samples.length) this.push(skip === 0 ? samples : samples.subarray(skip));
  }

  /** Drops pending audio from sample `at` on (audio that was sent but never played). */
  truncate(at: number): void {
    const flushed = this.length - this.pendingSamples;
    if (at >= this.length || at < flushed) return;
    let keep = at - flushed;
    const kept: Int16Array[] = [];
    for (const block of this.pending) {
      if (keep <= 0) break;
      kept.push(block.length <= keep ? block : block.subarray(0, keep));
      keep -= Math.min(block.length, keep);
    }
    this.pending = kept;
    this.pendingSamples = at - flushed;
    this.length = at;
  }

  flush(): void {
    if (this.pendingSamples === 0) return;
    const bytes = Buffer.allocUnsafe(this.pendingSamples * 2);
    let offset = 0;
    for (const block of this.pending) {
      bytes.set(new Uint8Array(block.buffer, block.byteOffset, block.byteLength), offset);
      offset += block.byteLength;
    }
    appendFileSync(this.file, bytes);
    this.pending = [];
    this.pendingSamples = 0;
  }

  private push(block: Int16Array): void {
    this.pending.push(block.slice());
    this.pendingSamples += block.length;
    this.length += block.length;
    if (this.pendingSamples >= FLUSH_SAMPLES) this.flush();
  }
}

function wavHeader(frames: number, channels: number, rate: number): Buffer {
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

  constructor(private readonly wavPath: string) {
    mkdirSync(dirname(wavPath), { recursive: true });
    this.caller = new SpooledChannel(`${wavPath}.caller.raw`);
    this.agent = new SpooledChannel(`${wavPath}.agent.raw`);
  }

  /** Caller audio at `offsetMs` from the call start (on the inbound audio clock). */
  callerAudio(frame: Int16Array, offsetMs: number): void {
    this.caller.write(frame, Math.max(0, Math.round((offsetMs * INTERNAL_RATE) / 1000)));
  }

  /** Agent audio at `offsetMs` from the call start (when it plays). */
  agentAudio(frame: Int16Array, offsetMs: number): void {
    this.agent.write(frame, Math.max(0, Math.round((offsetMs * INTERNAL_RATE) / 1000)));
  }

  /** Agent audio after `offsetMs` was cleared before it played. */
  agentCleared(offsetMs: number): void {
    this.agent.truncate(Math.max(0, Math.round((offsetMs * INTERNAL_RATE) / 1000)));
  }

  /** Writes the WAV (16 kHz, 2 channels, PCM16) and removes the spools; returns its length in samples. */
  finish(): number {
    if (this.finished) return 0;
    this.finished = true;
    this.caller.flush();
    this.agent.flush();
    const frames = Math.max(this.caller.length, this.agent.length);
    const out = openSync(this.wavPath, 'w');
    const inputs = [openSync(`${this.wavPath}.caller.raw`, 'r'), openSync(`${this.wavPath}.agent.raw`, 'r')];
    try {
      writeSync(out, wavHeader(frames, 2, INTERNAL_RATE));
      // Interleave a block at a time through typed arrays: the end of a call must not stall
      // the other calls' pacing for long.
      const block = 16384;
      const left = new Int16Array(block);
      const right = new Int16Array(block);
      const interleaved = new Int16Array(block * 2);
      for (let done = 0; done < frames; done += block) {
        const n = Math.min(block, frames - done);
        left.fill(0);
        right.fill(0);
        readSync(inputs[0]!, new Uint8Array(left.buffer), 0, n * 2, done * 2);
        readSync(inputs[1]!, new Uint8Array(right.buffer), 0, n * 2, done * 2);
        for (let i = 0; i < n; i++) {
          interleaved[i * 2] = left[i]!;
          interleaved[i * 2 + 1] = right[i]!;
        }
        writeSync(out, new Uint8Array(interleaved.buffer, 0, n * 4));
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
