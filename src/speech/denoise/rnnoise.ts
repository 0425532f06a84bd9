// Noise suppression before the VAD and the recogniser: RNNoise (Xiph's recurrent-network
// denoiser), its 0.1 model compiled to WebAssembly as @jitsi/rnnoise-wasm ships it (the 0.2 model
// in the same package cost 2.7× as much a frame here: ~0.7 ms per 10 ms). RNNoise takes 10 ms
// frames at 48 kHz: a call's 8 or 16 kHz audio is resampled up, denoised and resampled back, and
// comes out a fixed ~20 ms later.
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { Resampler } from '../../audio/resampler.ts';
import { SpeechError } from '../errors.ts';

const RNNOISE_RATE = 48000;
const RNNOISE_FRAME = 480;

/** The parts of the Emscripten module we call (rnnoise.h, and the heap). */
interface RnnoiseWasm {
  _rnnoise_create(model: number): number;
  _rnnoise_destroy(state: number): void;
  /** Denoises 480 floats (int16 scale) at `input` into `output`; returns its voice probability. */
  _rnnoise_process_frame(state: number, output: number, input: number): number;
  _malloc(bytes: number): number;
  _free(pointer: number): void;
  HEAPF32: Float32Array;
}
type RnnoiseFactory = (options: { wasmBinary: Uint8Array }) => Promise<RnnoiseWasm>;

let loading: Promise<RnnoiseWasm> | undefined;

/** The WebAssembly module, compiled once per process (a few ms) and shared by every call. */
export function loadRnnoise(): Promise<RnnoiseWasm> {
  loading ??= (async () => {
    try {
      const require = createRequire(import.meta.url);
      const glue = require.resolve('@jitsi/rnnoise-wasm/dist/rnnoise.js');
      const wasmBinary = await readFile(require.resolve('@jitsi/rnnoise-wasm/dist/rnnoise.wasm'));
      const module = (await import(pathToFileURL(glue).href)) as { default: RnnoiseFactory };
      return await module.default({ wasmBinary });
    } catch (error) {
      loading = undefined;
      throw new SpeechError('DENOISE_UNAVAILABLE', `RNNoise did not load: ${(error as Error).message}`, {
        cause: error,
      });
    }
  })();
  return loading;
}

/** One caller's noise suppressor: frames in at the call's rate, the same number of samples out, denoised. */
export class RnnoiseDenoiser {
  private readonly state: number;
  private readonly buffer: number;
  private readonly up: Resampler | null;
  private readonly down: Resampler | null;
  private readonly block = new Float32Array(RNNOISE_FRAME);
  private filled = 0;
  /** Denoised audio at the call's rate not yet handed out. */
  private ready = new Int16Array(0);
  private closed = false;

  constructor(
    private readonly wasm: RnnoiseWasm,
    readonly rate: number,
  ) {
    this.state = wasm._rnnoise_create(0);
    this.buffer = wasm._malloc(RNNOISE_FRAME * 4);
    this.up = rate === RNNOISE_RATE ? null : new Resampler(rate, RNNOISE_RATE);
    this.down = rate === RNNOISE_RATE ? null : new Resampler(RNNOISE_RATE, rate);
  }

  /**
   * Returns as many samples as `frame` has. Until RNNoise's first block and the resamplers' delay
   * have passed, that is silence; from then on the output runs that fixed delay behind the input.
   */
  process(frame: Int16Array): Int16Array {
    if (this.closed) return frame;
    const wide = this.up ? this.up.push(frame) : frame;
    const denoised: Int16Array[] = [];
    for (let i = 0; i < wide.length; i++) {
      this.block[this.filled++] = wide[i]!;
      if (this.filled === RNNOISE_FRAME) {
        denoised.push(this.denoiseBlock());
        this.filled = 0;
      }
    }
    for (const chunk of denoised) this.append(this.down ? this.down.push(chunk) : chunk);
    const out = new Int16Array(frame.length);
    const take = Math.min(frame.length, this.ready.length);
    // Short only at the start: the missing samples are the delay, placed before the audio.
    out.set(this.ready.subarray(0, take), frame.length - take);
    this.ready = this.ready.subarray(take);
    return out;
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.wasm._rnnoise_destroy(this.state);
    this.wasm._free(this.buffer);
  }

  private denoiseBlock(): Int16Array {
    // The heap may be replaced when the module's memory grows: look it up each time.
    const heap = new Float32Array(this.wasm.HEAPF32.buffer, this.buffer, RNNOISE_FRAME);
    heap.set(this.block);
    this.wasm._rnnoise_process_frame(this.state, this.buffer, this.buffer);
    const out = new Int16Array(RNNOISE_FRAME);
    for (let i = 0; i < RNNOISE_FRAME; i++) out[i] = Math.max(-32768, Math.min(32767, Math.round(heap[i]!)));
    return out;
  }

  private append(chunk: Int16Array): void {
    if (chunk.length === 0) return;
    const joined = new Int16Array(this.ready.length + chunk.length);
    joined.set(this.ready);
    joined.set(chunk, this.ready.length);
    this.ready = joined;
  }
}

/** A denoiser for a call at `rate`, once the module is loaded. */
export async function openRnnoise(rate: number): Promise<RnnoiseDenoiser> {
  return new RnnoiseDenoiser(await loadRnnoise(), rate);
}
