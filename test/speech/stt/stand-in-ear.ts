// The ear of the stand-in recognisers (deepgram/stand-in.ts, assemblyai/stand-in.ts): it reads the
// audio a stand-in receives with the embedded recogniser (pocketsphinx), so the stand-ins give
// real words with real times, and it hears pauses by their level, as a provider's endpointing
// does. A stand-in turns what it hears into its provider's messages.
import { rms } from '../../../src/audio/pcm.ts';
import { PocketsphinxEngine } from '../../../src/speech/stt/pocketsphinx/engine.ts';
import type { SttResult, SttStream } from '../../../src/speech/types.ts';

/** One engine for every stand-in in a test process. */
let shared: PocketsphinxEngine | null = null;
export function standInEngine(): PocketsphinxEngine {
  shared ??= new PocketsphinxEngine({ workers: 1 });
  return shared;
}

/** A 10 ms window louder than this is speech (flite's voice is far above it, μ-law silence far below). */
const SPEECH_RMS = 300;

export interface EarEvents {
  /** The words read so far in the utterance under way. */
  guess(text: string): void;
  /** A pause of `silenceMs` after speech (checked every 10 ms of audio). */
  pause(silenceMs: number): void;
}

export class StandInEar {
  private stream: SttStream | null = null;
  /** Samples received, for the audio clock (seconds of audio since the stream began). */
  private received = 0;
  private window: number[] = [];
  /** Speech since the last settle. */
  heardSpeech = false;
  private silentMs = 0;
  private chain: Promise<unknown> = Promise.resolve();

  private constructor(
    readonly sampleRate: number,
    private readonly events: EarEvents,
  ) {}

  static async open(sampleRate: number, events: EarEvents, phrases: string[] = []): Promise<StandInEar> {
    const ear = new StandInEar(sampleRate, events);
    ear.stream = await standInEngine().open({
      sampleRate,
      language: 'en-US',
      phrases,
      events: { partial: (r: SttResult) => r.text && events.guess(r.text) },
    });
    return ear;
  }

  /**
   * Loads the decoders a stream at this rate with these phrases reads with, pooled for the streams after it. Phrases
   * have a decoder of their own (hintDecoder in src/speech/stt/pocketsphinx/worker.ts), about 0.5 s to load on an idle
   * machine and up to 2 s on a loaded one; a stream that opens it cold reads nothing of its audio until it has.
   */
  static async warm(sampleRate: number, phrases: string[] = []): Promise<void> {
    const ear = await StandInEar.open(sampleRate, { guess: () => undefined, pause: () => undefined }, phrases);
    ear.hear(new Int16Array(sampleRate / 10));
    await ear.settle();
    await ear.close();
  }

  /** Seconds of audio received. */
  get seconds(): number {
    return this.received / this.sampleRate;
  }

  hear(samples: Int16Array): void {
    this.stream?.push(samples);
    this.received += samples.length;
    const per10ms = this.sampleRate / 100;
    for (const s of samples) {
      this.window.push(s);
      if (this.window.length < per10ms) continue;
      const loud = rms(Int16Array.from(this.window)) > SPEECH_RMS;
      this.window = [];
      if (loud) {
        this.heardSpeech = true;
        this.silentMs = 0;
      } else if (this.heardSpeech) {
        this.silentMs += 10;
        this.events.pause(this.silentMs);
      }
    }
  }

  /** Reads what was heard since the last settle as final (in order with other settles). */
  settle(): Promise<SttResult> {
    const next = this.chain.then(async () => {
      this.heardSpeech = false;
      this.silentMs = 0;
      return (await this.stream?.finalize()) ?? { text: '' };
    });
    this.chain = next.catch(() => undefined);
    return next;
  }

  async close(): Promise<void> {
    await this.chain;
    await this.stream?.close();
    this.stream = null;
  }
}
