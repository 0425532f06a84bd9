// flite, the embedded default voice: the Debian `flite` CLI. Each text piece runs in its own
// flite process that was spawned ahead of time and waits on stdin with its voice loaded, so a
// warm piece costs only synthesis. flite cannot write a WAV to a pipe when reading from a file
// (it re-opens its output to append each utterance), so each process writes a private temp file
// that is read when it exits. Pieces are synthesised one ahead of playback.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { readFile, unlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { decodeWav } from '../../audio/wav.ts';
import { SpeechError } from '../errors.ts';
import type { PcmChunk, TtsEngine, TtsSynthesisOptions } from '../types.ts';
import { PcmOutput, unlessAborted } from './output.ts';
import { holdProcessOpen } from './spawn.ts';
import { splitForSpeech } from './text.ts';

/** Voices compiled into Debian's flite 2.2. kal is 8 kHz; the others are 16 kHz. */
export const FLITE_VOICES = ['slt', 'rms', 'awb', 'kal', 'kal16', 'awb_time'] as const;
export type FliteVoice = (typeof FLITE_VOICES)[number];

export interface FliteOptions {
  /** Path of the flite binary (default: `flite` on PATH). */
  binary?: string;
  /** Voice when a call gives none. */
  voice?: string;
  /** Speed when a call gives none (1 = normal). */
  speed?: number;
  /** Keep one process per voice waiting with its voice loaded (default true). */
  prespawn?: boolean;
}

interface FliteJob {
  child: ChildProcess;
  output: string;
  /** Resolves with the WAV bytes once flite exits after the text was written. */
  done: Promise<Uint8Array>;
}

// Spares left waiting when Node exits write an empty file as they end; remove the folders then.
const liveDirs = new Set<string>();
let exitHookInstalled = false;
function removeOnExit(dir: string): void {
  liveDirs.add(dir);
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.once('exit', () => {
    for (const d of liveDirs) rmSync(d, { recursive: true, force: true });
  });
}

function isFliteVoice(voice: string): voice is FliteVoice {
  return (FLITE_VOICES as readonly string[]).includes(voice);
}

export class FliteTtsEngine implements TtsEngine {
  readonly name = 'flite';
  private readonly binary: string;
  private readonly defaultVoice: FliteVoice;
  private readonly defaultSpeed: number;
  private readonly prespawn: boolean;
  private readonly dir: string;
  private readonly spares = new Map<string, FliteJob>();
  private readonly running = new Set<FliteJob>();
  private counter = 0;
  private closed = false;

  constructor(options: FliteOptions = {}) {
    const voice = options.voice ?? 'slt';
    if (!isFliteVoice(voice)) throw new SpeechError('TTS_VOICE_UNKNOWN', `flite has no voice "${voice}" (known: ${FLITE_VOICES.join(', ')})`);
    this.binary = options.binary ?? 'flite';
    this.defaultVoice = voice;
    this.defaultSpeed = options.speed ?? 1;
    this.prespawn = options.prespawn ?? true;
    this.dir = mkdtempSync(join(tmpdir(), 'flite-'));
    removeOnExit(this.dir);
  }

  /** Spawn the waiting process for a voice now, so the first sentence of a call is already warm. */
  warm(voiceId?: string, speed?: number): void {
    const { voice, stretch } = this.resolve(voiceId, speed);
    const key = `${voice}|${stretch}`;
    if (!this.spares.has(key)) this.spares.set(key, this.spawnJob(voice, stretch));
  }

  async *synthesize(text: string, options: TtsSynthesisOptions): AsyncIterable<PcmChunk> {
    if (this.closed) throw new SpeechError('TTS_ENGINE_CLOSED', 'flite engine is closed');
    const { signal } = options;
    const pieces = splitForSpeech(text);
    if (pieces.length === 0 || signal?.aborted) return;
    const { voice, stretch } = this.resolve(options.voiceId, options.speed);
    const output = new PcmOutput(options.sampleRate);
    const jobs: FliteJob[] = [];
    try {
      jobs.push(this.start(voice, stretch, pieces[0]!));
      for (let i = 0; i < pieces.length; i++) {
        const wav = await unlessAborted(jobs[i]!.done, signal);
        if (wav === null) return;
        // One piece ahead: the next one synthesises while this one plays. Started only now so
        // it does not compete for the CPU with the piece the caller is waiting for.
        if (i + 1 < pieces.length) jobs.push(this.start(voice, stretch, pieces[i + 1]!));
        const pcm = decodeWav(wav);
        for (const chunk of output.push(pcm.samples, pcm.sampleRate)) {
          if (signal?.aborted) return;
          yield chunk;
        }
      }
      for (const chunk of output.end()) {
        if (signal?.aborted) return;
        yield chunk;
      }
    } finally {
      for (const job of jobs) this.stop(job);
    }
  }

  /** Stop waiting processes and running jobs; remove temp files. */
  async close(): Promise<void> {
    this.closed = true;
    for (const job of [...this.spares.values(), ...this.running]) this.stop(job);
    this.spares.clear();
    rmSync(this.dir, { recursive: true, force: true });
    liveDirs.delete(this.dir);
  }

  private resolve(voiceId: string | undefined, speed: number | undefined): { voice: FliteVoice; stretch: string } {
    const voice = voiceId ?? this.defaultVoice;
    if (!isFliteVoice(voice)) throw new SpeechError('TTS_VOICE_UNKNOWN', `flite has no voice "${voice}" (known: ${FLITE_VOICES.join(', ')})`);
    const rate = speed ?? this.defaultSpeed;
    if (!(rate > 0)) throw new SpeechError('TTS_CONFIG_INVALID', `speed ${rate} is not positive`);
    // flite stretches durations: 2x speed is a stretch of 0.5.
    return { voice, stretch: (1 / rate).toFixed(3) };
  }

  private start(voice: FliteVoice, stretch: string, text: string): FliteJob {
    const key = `${voice}|${stretch}`;
    let job = this.spares.get(key);
    this.spares.delete(key);
    if (!job || job.child.exitCode !== null || job.child.killed) job = this.spawnJob(voice, stretch);
    if (this.prespawn) {
      // Replace the spare once this job is done, off the path of the audio being waited for.
      const replenish = () => {
        if (!this.closed && !this.spares.has(key)) this.spares.set(key, this.spawnJob(voice, stretch));
      };
      job.done.then(replenish, replenish);
    }
    this.running.add(job);
    holdProcessOpen(job.child, true);
    job.child.stdin?.end(`${text}\n`);
    return job;
  }

  private spawnJob(voice: FliteVoice, stretch: string): FliteJob {
    const output = join(this.dir, `${++this.counter}.wav`);
    const child = spawn(this.binary, ['-voice', voice, '--setf', `duration_stretch=${stretch}`, '-f', '-', '-o', output], {
      stdio: ['pipe', 'ignore', 'pipe'],
    });
    holdProcessOpen(child, false);
    let stderr = '';
    child.stderr?.on('data', (data: Buffer) => {
      if (stderr.length < 2000) stderr += data.toString();
    });
    // A killed spare may have its stdin closed under it; that is not an error worth a crash.
    child.stdin?.on('error', () => undefined);
    const done = new Promise<Uint8Array>((resolve, reject) => {
      child.once('error', (error: NodeJS.ErrnoException) => {
        reject(
          error.code === 'ENOENT'
            ? new SpeechError('TTS_ENGINE_UNAVAILABLE', `flite binary "${this.binary}" not found (apt-get install flite)`, { cause: error })
            : new SpeechError('TTS_SYNTHESIS_FAILED', `flite failed to start: ${error.message}`, { cause: error }),
        );
      });
      child.once('close', (code, sig) => {
        if (code !== 0) {
          reject(new SpeechError('TTS_SYNTHESIS_FAILED', `flite exited with ${code ?? sig}: ${stderr.trim()}`));
          return;
        }
        readFile(output).then(
          (bytes) => {
            unlink(output).catch(() => undefined);
            resolve(bytes);
          },
          (error: unknown) => reject(new SpeechError('TTS_SYNTHESIS_FAILED', 'flite wrote no audio', { cause: error })),
        );
      });
    });
    // Nobody may await a spare that is killed at close; keep its rejection from going unhandled.
    done.catch(() => undefined);
    return { child, output, done };
  }

  private stop(job: FliteJob): void {
    this.running.delete(job);
    if (job.child.exitCode === null && !job.child.killed) job.child.kill('SIGKILL');
    unlink(job.output).catch(() => undefined);
  }
}
