// Microphone capture on the audio thread: the context's rate (often 48 kHz or 44.1 kHz) down
// to 16 kHz PCM16 little-endian, posted to the page as 20 ms (640-byte) frames with the input
// level. Muted, it still posts frames — of silence — so the server's audio clock keeps running.
// Self-contained (no imports) so every browser's AudioWorklet loads it; the classes are also
// exported for unit tests under Node, where AudioWorkletProcessor does not exist.

export const OUT_RATE = 16000;
export const FRAME_SAMPLES = 320; // 20 ms at 16 kHz = 640 bytes

/** RBJ low-pass biquad, direct form I. */
class Biquad {
  constructor(cutoff, rate, q) {
    const w0 = (2 * Math.PI * cutoff) / rate;
    const alpha = Math.sin(w0) / (2 * q);
    const cos = Math.cos(w0);
    const a0 = 1 + alpha;
    this.b0 = (1 - cos) / 2 / a0;
    this.b1 = (1 - cos) / a0;
    this.b2 = this.b0;
    this.a1 = (-2 * cos) / a0;
    this.a2 = (1 - alpha) / a0;
    this.x1 = this.x2 = this.y1 = this.y2 = 0;
  }
  run(x) {
    const y = this.b0 * x + this.b1 * this.x1 + this.b2 * this.x2 - this.a1 * this.y1 - this.a2 * this.y2;
    this.x2 = this.x1;
    this.x1 = x;
    this.y2 = this.y1;
    this.y1 = y;
    return y;
  }
}

/**
 * Any rate down to outRate: a 4th-order Butterworth low-pass below the new Nyquist (no aliasing
 * of the 8–24 kHz band into speech), then linear interpolation at fractional positions.
 */
export class Downsampler {
  constructor(inRate, outRate = OUT_RATE) {
    this.step = inRate / outRate;
    const cutoff = Math.min(0.45 * outRate, 0.45 * inRate);
    this.filters = inRate > outRate ? [new Biquad(cutoff, inRate, 0.5412), new Biquad(cutoff, inRate, 1.3066)] : [];
    this.prev = 0; // last filtered sample of the previous block: position -1
    this.pos = 0; // position of the next output sample, in input samples from this block's start
    this.scratch = new Float32Array(128);
  }
  /** Calls emit(sample) for every output sample the block completes. */
  process(input, emit) {
    const n = input.length;
    if (n === 0) return;
    if (this.scratch.length < n) this.scratch = new Float32Array(n);
    const x = this.scratch;
    for (let i = 0; i < n; i++) {
      let v = input[i];
      for (const f of this.filters) v = f.run(v);
      x[i] = v;
    }
    while (this.pos < n - 1) {
      const i = Math.floor(this.pos);
      const frac = this.pos - i;
      const a = i < 0 ? this.prev : x[i];
      const b = x[i + 1];
      emit(a + (b - a) * frac);
      this.pos += this.step;
    }
    this.pos -= n;
    this.prev = x[n - 1];
  }
}

/** Collects 16 kHz samples into PCM16 frames; returns each full frame with its RMS level. */
export class Framer {
  constructor(onFrame) {
    this.onFrame = onFrame;
    this.frame = new Int16Array(FRAME_SAMPLES);
    this.fill = 0;
    this.sumSquares = 0;
    this.muted = false;
  }
  push(sample) {
    const s = sample > 1 ? 1 : sample < -1 ? -1 : sample;
    this.sumSquares += s * s;
    this.frame[this.fill++] = this.muted ? 0 : Math.round(s < 0 ? s * 0x8000 : s * 0x7fff);
    if (this.fill === FRAME_SAMPLES) {
      const level = Math.sqrt(this.sumSquares / FRAME_SAMPLES);
      this.onFrame(this.frame, level);
      this.frame = new Int16Array(FRAME_SAMPLES);
      this.fill = 0;
      this.sumSquares = 0;
    }
  }
}

const Base = globalThis.AudioWorkletProcessor ?? class {};

class CaptureProcessor extends Base {
  constructor() {
    super();
    const rate = globalThis.sampleRate;
    this.downsampler = new Downsampler(rate, OUT_RATE);
    // Int16Array is little-endian on every platform browsers run on; the buffer is transferred.
    this.framer = new Framer((frame, level) => this.port.postMessage({ type: 'frame', pcm: frame.buffer, level }, [frame.buffer]));
    this.silence = new Float32Array(128);
    this.emit = (s) => this.framer.push(s);
    this.port.onmessage = (event) => {
      if (event.data?.type === 'mute') this.framer.muted = Boolean(event.data.value);
    };
  }
  process(inputs) {
    // No input (track ended or not yet connected): keep the clock running with silence.
    const channel = inputs[0]?.[0] ?? this.silence;
    this.downsampler.process(channel, this.emit);
    return true;
  }
}

if (typeof globalThis.registerProcessor === 'function') globalThis.registerProcessor('capture', CaptureProcessor);
