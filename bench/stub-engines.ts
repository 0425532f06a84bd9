// Speech and model stages that answer at once, so a load run measures the runtime's own cost
// (transport, codecs, session, pacing, store) and nothing else. Used by bench:calls and bench:soak
// with --engines stub.
import { spawn } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { z } from 'zod';
import type {
  PcmChunk,
  SpeechEngineProvider,
  SttStream,
  TtsEngine,
  TtsSynthesisOptions,
  VadEngine,
  VadEvent,
  VadOptions,
  VadStream,
} from '../src/speech/types.ts';

export const STUB = {
  /** Frame RMS above which the stub VAD hears speech (16-bit PCM). */
  speechRms: 500,
  /** Quiet after speech before the stub VAD reports its end, as Silero's min silence does. */
  silenceMs: 200,
  /** Frames of agent audio per synthesized text chunk, emitted at once. */
  ttsFrames: 25,
  text: 'I would like to book an appointment.',
  reply: 'Sure, that works.',
} as const;

/** Root mean square of one frame of 16-bit PCM: what the stub VAD compares with STUB.speechRms. */
export function frameRms(samples: Int16Array): number {
  let sum = 0;
  for (let i = 0; i < samples.length; i++) sum += samples[i]! * samples[i]!;
  return Math.sqrt(sum / Math.max(1, samples.length));
}

class EnergyVadStream implements VadStream {
  lastProbability = 0;
  speaking = false;
  private samples = 0;
  private quietSince: number | null = null;
  constructor(private readonly rate: number) {}
  async push(samples: Int16Array): Promise<VadEvent[]> {
    const t = this.samples / this.rate;
    this.samples += samples.length;
    const loud = frameRms(samples) > STUB.speechRms;
    this.lastProbability = loud ? 1 : 0;
    if (loud) {
      this.quietSince = null;
      if (this.speaking) return [];
      this.speaking = true;
      return [{ type: 'speech_start', at: t }];
    }
    if (!this.speaking) return [];
    this.quietSince ??= t;
    if (this.samples / this.rate - this.quietSince < STUB.silenceMs / 1000 - 1e-9) return [];
    this.speaking = false;
    const at = this.quietSince;
    this.quietSince = null;
    return [{ type: 'speech_end', at }];
  }
  reset(): void {
    this.speaking = false;
    this.quietSince = null;
  }
  close(): void {}
}

class FixedTextStt implements SttStream {
  push(): void {}
  async finalize() {
    return { text: STUB.text };
  }
  cancel(): void {}
  async close(): Promise<void> {}
}

class BurstTts implements TtsEngine {
  readonly name = 'stub-burst';
  /** Frames emitted since start, to compare with frames the callers received. */
  framesEmitted = 0;
  /** The tone per rate, computed once: a stub must cost the service nothing per reply. */
  private readonly tones = new Map<number, Int16Array>();
  constructor(private readonly frames: number) {}
  async *synthesize(_text: string, options: TtsSynthesisOptions): AsyncIterable<PcmChunk> {
    let tone = this.tones.get(options.sampleRate);
    if (!tone) {
      tone = new Int16Array((options.sampleRate / 50) * this.frames);
      for (let i = 0; i < tone.length; i++)
        tone[i] = Math.round(3000 * Math.sin((2 * Math.PI * 300 * i) / options.sampleRate));
      this.tones.set(options.sampleRate, tone);
    }
    this.framesEmitted += this.frames;
    yield { samples: tone.slice(), sampleRate: options.sampleRate };
  }
  async close(): Promise<void> {}
}

export interface StubSpeech extends SpeechEngineProvider {
  readonly ttsEngine: BurstTts;
}

export function stubSpeechEngines(ttsFrames: number = STUB.ttsFrames): StubSpeech {
  const vad: VadEngine = {
    name: 'stub-energy',
    open: async (o: VadOptions) => new EnergyVadStream(o.sampleRate),
    close: async () => undefined,
  };
  const tts = new BurstTts(ttsFrames);
  return {
    vad,
    ttsEngine: tts,
    // One engine each for every call, never closed: the leases have nothing to give back.
    stt: () => ({
      engine: { name: 'stub-fixed', open: async () => new FixedTextStt(), close: async () => undefined },
      release: () => undefined,
    }),
    tts: () => ({ engine: tts, release: () => undefined }),
    close: async () => undefined,
  };
}

function sse(delta: Record<string, unknown>, finish: string | null = null): string {
  return `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 1_700_000_000, model: 'stub', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
}

/** A chat-completions server on 127.0.0.1 that streams a fixed short reply at once. */
export async function startInstantModel(): Promise<{ url: string; server: Server; close(): Promise<void> }> {
  const body =
    sse({ role: 'assistant', content: '' }) +
    (STUB.reply.match(/\S+\s*/g) ?? []).map((t) => sse({ content: t })).join('') +
    sse({}, 'stop') +
    'data: [DONE]\n\n';
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      res.end(body);
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    server,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * startInstantModel() in a child process (bench/instant-model.ts), so its answers never wait on the caller's event
 * loop.
 */
export async function spawnInstantModel(): Promise<{ url: string; close(): Promise<void> }> {
  const child = spawn(process.execPath, ['--import', 'tsx', join(import.meta.dirname, 'instant-model.ts')], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const line = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      out += chunk;
      if (out.includes('\n')) resolve(out.slice(0, out.indexOf('\n')));
    });
    void exited.then(() => reject(new Error('the instant model process exited before it listened')));
  });
  const { url } = z.object({ url: z.url() }).parse(JSON.parse(line));
  return {
    url,
    close: async () => {
      child.stdin.end();
      await exited;
    },
  };
}
