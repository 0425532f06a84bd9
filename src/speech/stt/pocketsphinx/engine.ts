// The embedded offline STT engine: pocketsphinx decoders in worker threads. push() only posts
// audio to the stream's worker, so the event loop never waits on a decoder.
import { isSupportedSampleRate } from '../../../audio/pcm.ts';
import type { SttEngine, SttResult, SttStream, SttStreamOptions } from '../../types.ts';
import { SttError } from '../errors.ts';
import { generalModel, missingModelFiles, telephoneModel, type ModelSpec } from './models.ts';
import { WorkerPool, type StreamSink, type WorkerSlot } from './pool.ts';

export const POCKETSPHINX_DEFAULTS = {
  /** Decoder threads; a stream pins to one. */
  workers: 2,
  /** Partial hypotheses at most this often (each costs a search traceback). */
  partialEveryMs: 300,
} as const;

export interface PocketsphinxEngineOptions {
  workers?: number;
  partialEveryMs?: number;
  /** Force a model; by default telephone-band streams get the telephone variant when built. */
  model?: 'general' | 'telephone';
}

let nextSid = 1;

class PocketsphinxStream implements SttStream, StreamSink {
  private closed = false;
  private fatal: SttError | null = null;
  private readonly onAbort = () => {
    this.cancel();
    void this.close();
  };

  constructor(
    private readonly slot: WorkerSlot,
    private readonly sid: number,
    private readonly options: SttStreamOptions,
  ) {
    options.signal?.addEventListener('abort', this.onAbort, { once: true });
  }

  onPartial(text: string): void {
    if (!this.closed) this.options.events?.partial?.({ text });
  }

  onFatal(err: SttError): void {
    if (this.fatal || this.closed) return;
    this.fatal = err;
    this.options.events?.error?.(err);
  }

  push(samples: Int16Array): void {
    if (this.closed) throw new SttError('STT_STREAM_CLOSED', 'push after close');
    if (this.fatal || samples.length === 0) return;
    // A copy: the caller may reuse its buffer, and the copy's memory moves to the worker.
    const copy = samples.slice();
    this.slot.post({ op: 'audio', sid: this.sid, samples: copy }, [copy.buffer as ArrayBuffer]);
  }

  async finalize(): Promise<SttResult> {
    if (this.closed) throw new SttError('STT_STREAM_CLOSED', 'finalize after close');
    if (this.fatal) throw this.fatal;
    const result = await this.slot.request((req) => ({ op: 'finalize', sid: this.sid, req }));
    const final = result ?? { text: '' };
    this.options.events?.final?.(final);
    return final;
  }

  cancel(): void {
    if (!this.closed && !this.fatal) this.slot.post({ op: 'cancel', sid: this.sid });
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.options.signal?.removeEventListener('abort', this.onAbort);
    this.slot.sinks.delete(this.sid);
    if (this.fatal) return;
    try {
      await this.slot.request((req) => ({ op: 'close', sid: this.sid, req }));
    } catch {
      // The worker died while closing: nothing is left to release.
    }
  }
}

export class PocketsphinxEngine implements SttEngine {
  readonly name = 'pocketsphinx';
  private readonly pool: WorkerPool;
  private readonly partialEveryMs: number;

  constructor(private readonly engineOptions: PocketsphinxEngineOptions = {}) {
    this.pool = new WorkerPool(engineOptions.workers ?? POCKETSPHINX_DEFAULTS.workers);
    this.partialEveryMs = engineOptions.partialEveryMs ?? POCKETSPHINX_DEFAULTS.partialEveryMs;
  }

  /** The model a stream at this rate decodes with. */
  modelFor(sampleRate: number): ModelSpec {
    const wanted = this.engineOptions.model ?? (sampleRate <= 8000 ? 'telephone' : 'general');
    return (wanted === 'telephone' ? telephoneModel() : null) ?? generalModel();
  }

  /**
   * A wideband stream switches to the telephone variant when its caller's speech proves
   * narrowband (a phone bridged in, a headset in hands-free mode): the general model knows only
   * wideband speech. Not when a model is forced.
   */
  narrowbandModelFor(sampleRate: number): ModelSpec | null {
    if (this.engineOptions.model || sampleRate <= 8000) return null;
    return telephoneModel();
  }

  async open(options: SttStreamOptions): Promise<SttStream> {
    if (!isSupportedSampleRate(options.sampleRate)) {
      throw new SttError('STT_UNSUPPORTED_RATE', `pocketsphinx cannot take ${options.sampleRate} Hz`);
    }
    if (!options.language.toLowerCase().startsWith('en')) {
      throw new SttError('STT_CONFIG_INVALID', `pocketsphinx has an English model only, not ${options.language}`);
    }
    const missing = missingModelFiles();
    if (missing.length > 0)
      throw new SttError('STT_MODEL_INVALID', `pocketsphinx model files missing: ${missing.join(', ')}`);
    options.signal?.throwIfAborted();
    const slot = this.pool.pick();
    const sid = nextSid++;
    const stream = new PocketsphinxStream(slot, sid, options);
    slot.sinks.set(sid, stream);
    try {
      await slot.request((req) => ({
        op: 'open',
        sid,
        req,
        model: this.modelFor(options.sampleRate),
        narrowbandModel: this.narrowbandModelFor(options.sampleRate),
        sampleRate: options.sampleRate,
        partialEveryMs: this.partialEveryMs,
        phrases: options.phrases ?? [],
      }));
    } catch (err) {
      slot.sinks.delete(sid);
      throw err;
    }
    return stream;
  }

  /** Make every worker thread die as a native fault would: for tests of crash handling. */
  crashWorkersForTest(): void {
    this.pool.crashAll();
  }

  /** Stop the worker threads; open streams fail with STT_ENGINE_CRASHED. */
  close(): Promise<void> {
    return this.pool.close();
  }
}
