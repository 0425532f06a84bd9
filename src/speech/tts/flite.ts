// flite, the embedded default voice: libflite through a native addon (native/flite) running in
// worker threads (./flite/pool.ts). Voices stay loaded in the workers, so a warm piece costs only
// synthesis, and audio streams out as flite's vocoder makes it: the first 20 ms of a sentence
// arrive after its text analysis plus one block of vocoding, not after the whole sentence.
// Pieces (splitForSpeech) are queued one at a time: the next piece starts as soon as the last
// one is synthesised, so other calls' pieces can take a free worker in between.
import { existsSync } from 'node:fs';
import { SpeechError } from '../errors.ts';
import type { PcmChunk, TtsEngine, TtsSynthesisOptions } from '../types.ts';
import { addonMissing, FLITE_ADDON_PATH } from './flite/addon.ts';
import { acquirePool, releasePool, type FliteJob, type FlitePool, type JobSink } from './flite/pool.ts';
import { PcmOutput } from './output.ts';
import { splitForSpeech } from './text.ts';

/** Voices compiled into Debian's flite 2.2. kal is 8 kHz; the others are 16 kHz. */
export const FLITE_VOICES = ['slt', 'rms', 'awb', 'kal', 'kal16', 'awb_time'] as const;
export type FliteVoice = (typeof FLITE_VOICES)[number];

export interface FliteOptions {
  /** Voice when a call gives none. */
  voice?: string;
  /** Speed when a call gives none (1 = normal). */
  speed?: number;
  /** The built addon (default build/native/flite.node, made by npm run setup). */
  addonPath?: string;
}

function isFliteVoice(voice: string): voice is FliteVoice {
  return (FLITE_VOICES as readonly string[]).includes(voice);
}

interface Block {
  samples: Int16Array;
  sampleRate: number;
}

/** The audio of one synthesize() call: its pieces spoken in order, buffered until read. */
class PieceStream implements JobSink {
  private readonly blocks: Block[] = [];
  private next = 0;
  private job: FliteJob | null = null;
  private ended = false;
  private error: SpeechError | null = null;
  private wake: (() => void) | null = null;

  constructor(
    private readonly pool: FlitePool,
    private readonly voice: FliteVoice,
    private readonly stretch: number,
    private readonly pieces: string[],
    private readonly signal: AbortSignal | undefined,
    private readonly onSettled: (stream: PieceStream) => void,
  ) {
    signal?.addEventListener('abort', this.notify, { once: true });
    this.submitNext();
  }

  onAudio(samples: Int16Array, sampleRate: number): void {
    this.blocks.push({ samples, sampleRate });
    this.notify();
  }

  onDone(): void {
    this.job = null;
    this.submitNext();
    this.notify();
  }

  onError(err: SpeechError): void {
    this.job = null;
    this.error = err;
    this.onSettled(this);
    this.notify();
  }

  /** The next block, or null at the end of the text or as soon as the signal aborts. */
  async take(): Promise<Block | null> {
    for (;;) {
      if (this.signal?.aborted) return null;
      const block = this.blocks.shift();
      if (block) return block;
      if (this.error) throw this.error;
      if (this.ended) return null;
      await new Promise<void>((resolve) => (this.wake = resolve));
    }
  }

  /** Stop synthesis at once (abort, caller stopped reading, engine closed). */
  stop(error?: SpeechError): void {
    if (this.job) this.pool.cancel(this.job);
    this.job = null;
    this.ended = true;
    if (error && !this.error) {
      this.error = error;
      this.blocks.length = 0;
    }
    this.signal?.removeEventListener('abort', this.notify);
    this.onSettled(this);
    this.notify();
  }

  private submitNext(): void {
    if (this.ended) return;
    const text = this.pieces[this.next++];
    if (text === undefined) {
      this.ended = true;
      this.onSettled(this);
      return;
    }
    this.job = this.pool.submit(this.voice, text, this.stretch, this);
  }

  private readonly notify = (): void => {
    const wake = this.wake;
    this.wake = null;
    wake?.();
  };
}

export class FliteTtsEngine implements TtsEngine {
  readonly name = 'flite';
  private readonly defaultVoice: FliteVoice;
  private readonly defaultSpeed: number;
  private readonly addonPath: string;
  private pool: FlitePool | null = null;
  private readonly active = new Set<PieceStream>();
  private closed = false;

  constructor(options: FliteOptions = {}) {
    const voice = options.voice ?? 'slt';
    if (!isFliteVoice(voice))
      throw new SpeechError('TTS_VOICE_UNKNOWN', `flite has no voice "${voice}" (known: ${FLITE_VOICES.join(', ')})`);
    this.defaultVoice = voice;
    this.defaultSpeed = options.speed ?? 1;
    this.addonPath = options.addonPath ?? FLITE_ADDON_PATH;
  }

  /** Start the workers and load a voice now, so the first sentence of a call is already warm. */
  warm(voiceId?: string, speed?: number): void {
    if (this.closed || !existsSync(this.addonPath)) return;
    const { voice } = this.resolve(voiceId, speed);
    this.workers().warm(voice);
  }

  async *synthesize(text: string, options: TtsSynthesisOptions): AsyncIterable<PcmChunk> {
    if (this.closed) throw new SpeechError('TTS_ENGINE_CLOSED', 'flite engine is closed');
    const { signal } = options;
    const pieces = splitForSpeech(text);
    if (pieces.length === 0 || signal?.aborted) return;
    const { voice, stretch } = this.resolve(options.voiceId, options.speed);
    // Checked here so a missing build fails with its own code rather than as a dead worker.
    if (!existsSync(this.addonPath)) throw addonMissing(this.addonPath);
    const output = new PcmOutput(options.sampleRate, { trimLeadIn: options.trimLeadIn ?? false });
    const stream = new PieceStream(this.workers(), voice, stretch, pieces, signal, (s) => this.active.delete(s));
    this.active.add(stream);
    try {
      for (let block = await stream.take(); block !== null; block = await stream.take()) {
        for (const chunk of output.push(block.samples, block.sampleRate)) {
          if (signal?.aborted) return;
          yield chunk;
        }
      }
      if (signal?.aborted) return;
      for (const chunk of output.end()) {
        if (signal?.aborted) return;
        yield chunk;
      }
    } finally {
      stream.stop();
    }
  }

  /** Stop this engine's syntheses; the shared workers stop with the last engine. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const stream of [...this.active])
      stream.stop(new SpeechError('TTS_ENGINE_CLOSED', 'flite engine closed while speaking'));
    if (this.pool) {
      this.pool = null;
      await releasePool(this.addonPath);
    }
  }

  private workers(): FlitePool {
    this.pool ??= acquirePool(this.addonPath);
    return this.pool;
  }

  private resolve(voiceId: string | undefined, speed: number | undefined): { voice: FliteVoice; stretch: number } {
    const voice = voiceId ?? this.defaultVoice;
    if (!isFliteVoice(voice))
      throw new SpeechError('TTS_VOICE_UNKNOWN', `flite has no voice "${voice}" (known: ${FLITE_VOICES.join(', ')})`);
    const rate = speed ?? this.defaultSpeed;
    if (!(rate > 0)) throw new SpeechError('TTS_CONFIG_INVALID', `speed ${rate} is not positive`);
    // flite stretches durations: 2x speed is a stretch of 0.5.
    return { voice, stretch: 1 / rate };
  }
}
