import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { concatPcm, silence } from '../../../src/audio/pcm.ts';
import { readWavFile } from '../../../src/audio/wav.ts';
import { SpeechError } from '../../../src/speech/errors.ts';
import type { VadEvent } from '../../../src/speech/types.ts';
import { VAD_DEFAULTS } from '../../../src/speech/vad/defaults.ts';
import { SileroVadEngine, resolveVadOptions } from '../../../src/speech/vad/silero.ts';
import { fixtures } from '../../support/test-sets.ts';
import { segmentsOf } from './measure.ts';

const engine = new SileroVadEngine();
afterAll(() => engine.close());

let speech16: Int16Array;
let speech8: Int16Array;
beforeAll(async () => {
  const phrase = fixtures().filter((f) => f.text === 'i would like to book an appointment');
  speech16 = concatPcm([
    silence(1000, 16000),
    (await readWavFile(phrase.find((f) => f.sampleRate === 16000)!.path)).samples,
    silence(1000, 16000),
  ]);
  speech8 = concatPcm([
    silence(1000, 8000),
    (await readWavFile(phrase.find((f) => f.sampleRate === 8000)!.path)).samples,
    silence(1000, 8000),
  ]);
});

async function eventsOf(samples: Int16Array, sampleRate: 8000 | 16000, chunk: number): Promise<VadEvent[]> {
  const stream = await engine.open({ sampleRate });
  const events: VadEvent[] = [];
  for (let offset = 0; offset < samples.length; offset += chunk)
    events.push(...(await stream.push(samples.subarray(offset, offset + chunk))));
  return events;
}

describe('Silero VAD', () => {
  it('finds one spoken phrase at 16 kHz, starting after the leading second of silence', async () => {
    const segments = await segmentsOf(await engine.open({ sampleRate: 16000 }), speech16, 16000);
    expect(segments).toHaveLength(1);
    const [start, end] = segments[0]!;
    expect(start).toBeGreaterThanOrEqual(1);
    expect(start).toBeLessThan(1.4);
    expect(end).toBeGreaterThan(2.5);
    expect(end).toBeLessThan(speech16.length / 16000 - 0.5);
  });

  it('finds the same phrase in 8 kHz μ-law audio with 256-sample windows', async () => {
    const segments = await segmentsOf(await engine.open({ sampleRate: 8000 }), speech8, 8000);
    expect(segments).toHaveLength(1);
    expect(segments[0]![0]).toBeGreaterThanOrEqual(1);
  });

  it('gives the same events whatever the chunk size, on the clock of samples pushed', async () => {
    const framed = await eventsOf(speech16, 16000, 320);
    expect(await eventsOf(speech16, 16000, 97)).toEqual(framed);
    expect(await eventsOf(speech16, 16000, 16000)).toEqual(framed);
  });

  it('keeps state per stream: interleaved streams give the events each gives alone', async () => {
    const alone = await eventsOf(speech16, 16000, 320);
    const a = await engine.open({ sampleRate: 16000 });
    const b = await engine.open({ sampleRate: 16000 });
    const eventsA: VadEvent[] = [];
    const quiet = new Int16Array(320);
    for (let offset = 0; offset < speech16.length; offset += 320) {
      const [fromA] = await Promise.all([a.push(speech16.subarray(offset, offset + 320)), b.push(quiet)]);
      eventsA.push(...fromA);
    }
    expect(eventsA).toEqual(alone);
    expect(b.speaking).toBe(false);
  });

  it('stays silent on digital silence and reports a low probability', async () => {
    const stream = await engine.open({ sampleRate: 16000 });
    expect(await stream.push(new Int16Array(16000 * 2))).toEqual([]);
    expect(stream.lastProbability).toBeLessThan(0.1);
  });

  it('reset() starts the stream clock and state again', async () => {
    const stream = await engine.open({ sampleRate: 16000 });
    await stream.push(speech16.subarray(0, 40000));
    stream.reset();
    expect(stream.time).toBe(0);
    expect(stream.speaking).toBe(false);
    const events: VadEvent[] = [];
    for (let offset = 0; offset < speech16.length; offset += 320)
      events.push(...(await stream.push(speech16.subarray(offset, offset + 320))));
    expect(events).toEqual(await eventsOf(speech16, 16000, 320));
  });

  it('uses the defaults from one visible object, negative threshold 0.15 below the threshold', () => {
    expect(resolveVadOptions({ sampleRate: 16000 })).toEqual({
      sampleRate: 16000,
      threshold: VAD_DEFAULTS.threshold,
      negativeThreshold: VAD_DEFAULTS.threshold - VAD_DEFAULTS.negativeThresholdOffset,
      minSpeechMs: VAD_DEFAULTS.minSpeechMs,
      minSilenceMs: VAD_DEFAULTS.minSilenceMs,
    });
    expect(resolveVadOptions({ sampleRate: 8000, threshold: 0.7 }).negativeThreshold).toBeCloseTo(0.55);
  });

  it('rejects rates other than 8 and 16 kHz with VAD_UNSUPPORTED_RATE and bad thresholds with VAD_BAD_OPTIONS', async () => {
    await expect(engine.open({ sampleRate: 44100 as 16000 })).rejects.toMatchObject({ code: 'VAD_UNSUPPORTED_RATE' });
    await expect(engine.open({ sampleRate: 16000, threshold: 0.3, negativeThreshold: 0.4 })).rejects.toMatchObject({
      code: 'VAD_BAD_OPTIONS',
    });
  });

  it('rejects pushes after close with VAD_STREAM_CLOSED', async () => {
    const stream = await engine.open({ sampleRate: 16000 });
    stream.close();
    await expect(stream.push(new Int16Array(320))).rejects.toBeInstanceOf(SpeechError);
    await expect(stream.push(new Int16Array(320))).rejects.toMatchObject({ code: 'VAD_STREAM_CLOSED' });
  });

  it('reports a missing model file as VAD_MODEL_MISSING', async () => {
    const broken = new SileroVadEngine({ modelPath: '/nonexistent/silero.onnx' });
    await expect(broken.open({ sampleRate: 16000 })).rejects.toMatchObject({ code: 'VAD_MODEL_MISSING' });
  });
});

describe('Silero VAD engine close', () => {
  it('releases its model only after the windows under way on open streams are analysed: a push in flight settles, never runs on a released session', async () => {
    const engine = new SileroVadEngine();
    const stream = await engine.open({ sampleRate: 16000 });
    const inFlight = stream.push(silence(5_000, 16000));
    await engine.close();
    // The stream was stopped at a window boundary: its push resolves with what was analysed.
    await expect(inFlight).resolves.toBeInstanceOf(Array);
    expect(stream.time).toBeLessThan(5);
    await expect(stream.push(silence(20, 16000))).rejects.toMatchObject({ code: 'VAD_STREAM_CLOSED' });
  });
});
