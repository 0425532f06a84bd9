// espeak-ng: many languages, robotic but clear. The Debian CLI reads text on stdin and streams a
// WAV to stdout as it speaks (22.05 kHz), so audio flows sentence by sentence. Loading its
// phoneme data costs ~150 ms, so one process per voice and speed is spawned ahead of time and
// waits on stdin.
import { spawn, type ChildProcess } from 'node:child_process';
import { WavStreamReader } from '../../audio/wav-stream.ts';
import { SpeechError } from '../errors.ts';
import type { PcmChunk, TtsEngine, TtsSynthesisOptions } from '../types.ts';
import { PcmOutput } from './output.ts';
import { holdProcessOpen } from './spawn.ts';

export interface EspeakOptions {
  binary?: string;
  /** espeak-ng voice (language) name, e.g. "en-us", "fr", "de", "es". */
  voice?: string;
  speed?: number;
  prespawn?: boolean;
}

/** espeak-ng's normal rate in words per minute; speed 1 = this. */
const BASE_WORDS_PER_MINUTE = 175;
// Voice names are letters, digits and + - _ / (variants like "en-us+f3"); never an option.
const VOICE_PATTERN = /^[A-Za-z][\w+/-]{0,40}$/;

interface EspeakJob {
  child: ChildProcess;
  stderr: () => string;
  exited: Promise<number | null>;
}

export class EspeakTtsEngine implements TtsEngine {
  readonly name = 'espeak';
  private readonly binary: string;
  private readonly defaultVoice: string;
  private readonly defaultSpeed: number;
  private readonly prespawn: boolean;
  private readonly spares = new Map<string, EspeakJob>();
  private readonly running = new Set<EspeakJob>();
  private closed = false;

  constructor(options: EspeakOptions = {}) {
    this.binary = options.binary ?? 'espeak-ng';
    this.defaultVoice = options.voice ?? 'en-us';
    this.defaultSpeed = options.speed ?? 1;
    this.prespawn = options.prespawn ?? true;
  }

  warm(voiceId?: string, speed?: number): void {
    const args = this.args(voiceId, speed);
    const key = args.join(' ');
    if (!this.spares.has(key)) this.spares.set(key, this.spawnJob(args));
  }

  async *synthesize(text: string, options: TtsSynthesisOptions): AsyncIterable<PcmChunk> {
    if (this.closed) throw new SpeechError('TTS_ENGINE_CLOSED', 'espeak engine is closed');
    const { signal } = options;
    const input = text.replace(/\s+/g, ' ').trim();
    if (input === '' || signal?.aborted) return;
    const args = this.args(options.voiceId, options.speed);
    const job = this.take(args);
    const onAbort = () => this.stop(job);
    signal?.addEventListener('abort', onAbort, { once: true });
    try {
      holdProcessOpen(job.child, true);
      job.child.stdin?.end(`${input}\n`);
      const reader = new WavStreamReader();
      const output = new PcmOutput(options.sampleRate, { trimLeadIn: options.trimLeadIn ?? false });
      const stdout = job.child.stdout;
      if (!stdout) throw new SpeechError('TTS_SYNTHESIS_FAILED', 'espeak-ng has no stdout');
      for await (const data of stdout) {
        if (signal?.aborted) return;
        if (!(data instanceof Uint8Array)) continue;
        const samples = reader.push(data);
        if (samples.length === 0) continue;
        for (const chunk of output.push(samples, reader.sampleRate)) {
          if (signal?.aborted) return;
          yield chunk;
        }
      }
      const code = await job.exited;
      if (signal?.aborted) return;
      if (code !== 0) {
        const message = job.stderr().trim();
        throw new SpeechError(
          /voice/i.test(message) ? 'TTS_VOICE_UNKNOWN' : 'TTS_SYNTHESIS_FAILED',
          `espeak-ng exited with ${code}: ${message}`,
        );
      }
      for (const chunk of output.end()) {
        if (signal?.aborted) return;
        yield chunk;
      }
    } finally {
      signal?.removeEventListener('abort', onAbort);
      this.stop(job);
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const job of [...this.spares.values(), ...this.running]) this.stop(job);
    this.spares.clear();
  }

  private args(voiceId: string | undefined, speed: number | undefined): string[] {
    const voice = voiceId ?? this.defaultVoice;
    if (!VOICE_PATTERN.test(voice))
      throw new SpeechError('TTS_VOICE_UNKNOWN', `"${voice}" is not an espeak-ng voice name`);
    const rate = speed ?? this.defaultSpeed;
    if (!(rate > 0)) throw new SpeechError('TTS_CONFIG_INVALID', `speed ${rate} is not positive`);
    return ['--stdout', '-v', voice, '-s', String(Math.round(BASE_WORDS_PER_MINUTE * rate))];
  }

  private take(args: string[]): EspeakJob {
    const key = args.join(' ');
    let job = this.spares.get(key);
    this.spares.delete(key);
    if (!job || job.child.exitCode !== null || job.child.killed) job = this.spawnJob(args);
    this.running.add(job);
    if (this.prespawn) {
      const replenish = () => {
        if (!this.closed && !this.spares.has(key)) this.spares.set(key, this.spawnJob(args));
      };
      job.exited.then(replenish, replenish);
    }
    return job;
  }

  private spawnJob(args: string[]): EspeakJob {
    const child = spawn(this.binary, args, { stdio: ['pipe', 'pipe', 'pipe'] });
    holdProcessOpen(child, false);
    let stderr = '';
    child.stderr?.on('data', (data: Buffer) => {
      if (stderr.length < 2000) stderr += data.toString();
    });
    child.stdin?.on('error', () => undefined);
    const exited = new Promise<number | null>((resolve, reject) => {
      child.once('error', (error: NodeJS.ErrnoException) => {
        reject(
          error.code === 'ENOENT'
            ? new SpeechError(
                'TTS_ENGINE_UNAVAILABLE',
                `espeak-ng binary "${this.binary}" not found (apt-get install espeak-ng)`,
                { cause: error },
              )
            : new SpeechError('TTS_SYNTHESIS_FAILED', `espeak-ng failed to start: ${error.message}`, { cause: error }),
        );
      });
      child.once('close', (code) => resolve(code));
    });
    exited.catch(() => undefined);
    return { child, stderr: () => stderr, exited };
  }

  private stop(job: EspeakJob): void {
    this.running.delete(job);
    if (job.child.exitCode === null && !job.child.killed) job.child.kill('SIGKILL');
  }
}
