// The audio-thread code of the web-call page, run under Node: resampling to 16 kHz 20 ms frames,
// and the playback jitter buffer's marks and clear.
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';

interface CaptureModule {
  FRAME_SAMPLES: number;
  Downsampler: new (
    inRate: number,
    outRate?: number,
  ) => { process(input: Float32Array, emit: (s: number) => void): void };
  Framer: new (onFrame: (frame: Int16Array, level: number) => void) => { push(s: number): void; muted: boolean };
}
interface PlaybackModule {
  JitterBuffer: new (
    outRate: number,
    primeMs?: number,
  ) => {
    setRate(inRate: number): void;
    push(pcm: Int16Array): void;
    mark(name: string): void;
    clear(): string[];
    render(out: Float32Array): string[];
  };
}

const dir = join(import.meta.dirname, '..', '..', 'media', 'web');
// A runtime path keeps tsc from typing the plain-JS page files; the interfaces above do.
const load = async <T>(file: string): Promise<T> => (await import(pathToFileURL(join(dir, file)).href)) as T;

function sine(hz: number, rate: number, n: number, amp = 0.5): Float32Array {
  const x = new Float32Array(n);
  for (let i = 0; i < n; i++) x[i] = amp * Math.sin((2 * Math.PI * hz * i) / rate);
  return x;
}

function rms(x: ArrayLike<number>): number {
  let sum = 0;
  for (let i = 0; i < x.length; i++) sum += x[i]! * x[i]!;
  return Math.sqrt(sum / x.length);
}

describe('capture worklet', () => {
  for (const rate of [48000, 44100, 16000]) {
    it(`turns 1 s at ${rate} Hz in 128-sample blocks into 50 frames of 320 samples, keeping speech-band level`, async () => {
      const { Downsampler, Framer, FRAME_SAMPLES } = await load<CaptureModule>('capture-worklet.js');
      const frames: Int16Array[] = [];
      const framer = new Framer((f) => frames.push(f));
      const down = new Downsampler(rate);
      const input = sine(1000, rate, rate);
      for (let i = 0; i + 128 <= input.length; i += 128)
        down.process(input.subarray(i, i + 128), (s) => framer.push(s));
      expect(FRAME_SAMPLES).toBe(320);
      expect(frames.length).toBeGreaterThanOrEqual(49);
      expect(frames.length).toBeLessThanOrEqual(50);
      const level = rms(Array.from(frames[25]!, (v) => v / 0x8000));
      expect(level).toBeGreaterThan(0.3);
      expect(level).toBeLessThan(0.4);
    });
  }

  it('filters out sound above the 16 kHz rate’s Nyquist instead of folding it into speech', async () => {
    const { Downsampler } = await load<CaptureModule>('capture-worklet.js');
    const out: number[] = [];
    const down = new Downsampler(48000);
    const input = sine(12000, 48000, 48000);
    for (let i = 0; i + 128 <= input.length; i += 128) down.process(input.subarray(i, i + 128), (s) => out.push(s));
    expect(rms(out.slice(1600))).toBeLessThan(0.05);
  });

  it('sends frames of silence while muted, still reporting the microphone level', async () => {
    const { Framer } = await load<CaptureModule>('capture-worklet.js');
    const frames: { frame: Int16Array; level: number }[] = [];
    const framer = new Framer((frame, level) => frames.push({ frame, level }));
    framer.muted = true;
    for (let i = 0; i < 640; i++) framer.push(0.5);
    expect(frames).toHaveLength(2);
    expect(frames.every((f) => f.frame.every((v) => v === 0))).toBe(true);
    expect(frames[0]!.level).toBeCloseTo(0.5);
  });
});

describe('playback worklet jitter buffer', () => {
  const block = () => new Float32Array(128);

  it('echoes a mark only after the audio before it has played', async () => {
    const { JitterBuffer } = await load<PlaybackModule>('playback-worklet.js');
    const jb = new JitterBuffer(48000);
    jb.push(new Int16Array(1600).fill(8000)); // 100 ms at 16 kHz
    jb.mark('end');
    let rendered = 0;
    let at = -1;
    let heard = 0;
    while (at < 0 && rendered < 48000) {
      const out = block();
      const played = jb.render(out);
      heard += out.filter((v) => Math.abs(v) > 0.2).length;
      rendered += 128;
      if (played.includes('end')) at = rendered;
    }
    // 100 ms at 48 kHz = 4800 samples, give or take one block.
    expect(at).toBeGreaterThanOrEqual(4800 - 128);
    expect(at).toBeLessThanOrEqual(4800 + 256);
    expect(heard).toBeGreaterThan(4600);
  });

  it('plays audio at the rate it is told (an Opus page decodes at 48 kHz): a mark after 100 ms of it fires at 100 ms', async () => {
    const { JitterBuffer } = await load<PlaybackModule>('playback-worklet.js');
    const jb = new JitterBuffer(48000);
    jb.setRate(48000);
    jb.push(new Int16Array(4800).fill(8000)); // 100 ms at 48 kHz
    jb.mark('end');
    let rendered = 0;
    let at = -1;
    while (at < 0 && rendered < 48000) {
      const played = jb.render(block());
      rendered += 128;
      if (played.includes('end')) at = rendered;
    }
    expect(at).toBeGreaterThanOrEqual(4800 - 128);
    expect(at).toBeLessThanOrEqual(4800 + 256);
  });

  it('holds audio back until the prime level, then plays', async () => {
    const { JitterBuffer } = await load<PlaybackModule>('playback-worklet.js');
    const jb = new JitterBuffer(48000, 60);
    jb.push(new Int16Array(320).fill(8000)); // 20 ms: under the 60 ms prime, no mark yet
    const out = block();
    jb.render(out);
    expect(out.every((v) => v === 0)).toBe(true);
    jb.push(new Int16Array(640).fill(8000)); // now 60 ms
    jb.render(out);
    expect(out.some((v) => v > 0.2)).toBe(true);
  });

  it('drops queued audio at once on clear and returns every pending mark', async () => {
    const { JitterBuffer } = await load<PlaybackModule>('playback-worklet.js');
    const jb = new JitterBuffer(48000);
    jb.push(new Int16Array(16000).fill(8000));
    jb.mark('a');
    jb.push(new Int16Array(16000).fill(8000));
    jb.mark('b');
    jb.render(block());
    expect(jb.clear()).toEqual(['a', 'b']);
    const out = block();
    expect(jb.render(out)).toEqual([]);
    expect(out.every((v) => v === 0)).toBe(true);
    // A mark with nothing queued before it is echoed on the next render.
    jb.mark('c');
    expect(jb.render(block())).toEqual(['c']);
  });
});
