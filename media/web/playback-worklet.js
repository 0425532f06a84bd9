// Agent audio playback on the audio thread: 16 kHz PCM16 frames from the socket (or decoded Opus,
// at the rate a `rate` message gives) go into a small
// jitter buffer, are resampled up to the context's rate and played. A mark is reported once
// every sample queued before it has been played; `clear` drops the queue at once and reports
// every pending mark (barge-in). Self-contained; the class is exported for unit tests.

export const IN_RATE = 16000;

export class JitterBuffer {
  /**
   * @param {number} outRate the audio context's rate
   * @param {number} primeMs audio held back before playback starts, to ride out network jitter
   */
  constructor(outRate, primeMs = 60, inRate = IN_RATE) {
    this.outRate = outRate;
    this.primeMs = primeMs;
    this.setRate(inRate);
    this.chunks = []; // Int16Array, oldest first
    this.offset = 0; // read position in chunks[0]
    this.queued = 0; // samples not yet read
    this.written = 0; // samples ever pushed
    this.read = 0; // samples ever read
    this.marks = []; // { name, at }: fires when read >= at
    this.playing = false;
    this.s0 = 0;
    this.s1 = 0;
    this.frac = 0;
  }
  /** The rate of the audio pushed from now on (an Opus page's decoder gives 48 kHz): set before its first audio. */
  setRate(inRate) {
    this.step = inRate / this.outRate;
    this.primeSamples = Math.round((this.primeMs / 1000) * inRate);
  }
  push(pcm) {
    if (pcm.length === 0) return;
    this.chunks.push(pcm);
    this.queued += pcm.length;
    this.written += pcm.length;
  }
  mark(name) {
    this.marks.push({ name, at: this.written });
  }
  /** Drops every queued sample; returns the names of every pending mark, oldest first. */
  clear() {
    this.chunks = [];
    this.offset = 0;
    this.read = this.written;
    this.queued = 0;
    this.playing = false;
    this.s0 = this.s1 = this.frac = 0;
    return this.marks.splice(0).map((m) => m.name);
  }
  next() {
    const chunk = this.chunks[0];
    const v = chunk[this.offset++] / 0x8000;
    if (this.offset === chunk.length) {
      this.chunks.shift();
      this.offset = 0;
    }
    this.queued--;
    this.read++;
    return v;
  }
  /** Fills out (Float32Array) with audio or silence; returns the names of marks now played. */
  render(out) {
    // Start once enough is queued, or when a mark says the utterance is complete: its tail plays.
    if (!this.playing && this.queued > 0 && (this.queued >= this.primeSamples || this.marks.length > 0)) {
      this.playing = true;
      this.s0 = 0;
      this.s1 = this.next();
      this.frac = 0;
    }
    for (let i = 0; i < out.length; i++) {
      if (!this.playing) {
        out[i] = 0;
        continue;
      }
      out[i] = this.s0 + (this.s1 - this.s0) * this.frac;
      this.frac += this.step;
      while (this.frac >= 1) {
        this.frac -= 1;
        this.s0 = this.s1;
        if (this.queued === 0) {
          // Underrun or end of speech: wait for the buffer to fill again.
          this.playing = false;
          this.s0 = this.s1 = this.frac = 0;
          break;
        }
        this.s1 = this.next();
      }
    }
    const played = [];
    // While playing, the sample in s1 has been read but not yet played.
    const playedUpTo = this.playing ? this.read - 1 : this.read;
    while (this.marks.length > 0 && this.marks[0].at <= playedUpTo) played.push(this.marks.shift().name);
    return played;
  }
}

const Base = globalThis.AudioWorkletProcessor ?? class {};

class PlaybackProcessor extends Base {
  constructor() {
    super();
    this.buffer = new JitterBuffer(globalThis.sampleRate);
    this.port.onmessage = (event) => {
      const msg = event.data;
      if (msg.type === 'audio') this.buffer.push(new Int16Array(msg.pcm));
      else if (msg.type === 'mark') this.buffer.mark(msg.name);
      else if (msg.type === 'rate') this.buffer.setRate(msg.rate);
      else if (msg.type === 'clear') {
        for (const name of this.buffer.clear()) this.port.postMessage({ type: 'mark', name });
      }
    };
  }
  process(_inputs, outputs) {
    const out = outputs[0];
    if (!out || out.length === 0) return true;
    const played = this.buffer.render(out[0]);
    for (let c = 1; c < out.length; c++) out[c].set(out[0]);
    for (const name of played) this.port.postMessage({ type: 'mark', name });
    return true;
  }
}

if (typeof globalThis.registerProcessor === 'function') globalThis.registerProcessor('playback', PlaybackProcessor);
