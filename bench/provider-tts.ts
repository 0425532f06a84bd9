// The service's own added latency on a streaming voice: for each provider (its stand-in at zero delay,
// speaking its protocol on loopback), the time from the provider's first audio byte of an utterance to
// the first frame the call sends to the line — socket read, JSON and base64, μ-law, framing, pacer —
// over ~50 utterances; next to the embedded flite voice, from its first PCM out of the engine to the
// first frame on the line. Each utterance is cut once its first frame is out (so the run does not wait
// for playback). The line is a phone line: 8 kHz, μ-law asked of the providers. Run: npm run bench:provider-tts
import { loadavg } from 'node:os';
import { VoiceConfigSchema } from '../src/agents/schema.ts';
import { AgentVoice, singleVoice } from '../src/call/agent/agent-voice.ts';
import { CallClock } from '../src/call/call-clock.ts';
import type { CallTransport, TransportHandlers } from '../src/call/transport.ts';
import { EgressPolicy } from '../src/net/egress.ts';
import { webSocketOpener } from '../src/net/websocket.ts';
import { CartesiaTtsEngine } from '../src/speech/tts/cartesia/engine.ts';
import { DeepgramTtsEngine } from '../src/speech/tts/deepgram/engine.ts';
import { ElevenLabsTtsEngine } from '../src/speech/tts/elevenlabs/engine.ts';
import { FliteTtsEngine } from '../src/speech/tts/flite.ts';
import type { PcmChunk, TtsEngine, TtsSynthesisOptions } from '../src/speech/types.ts';
import { realTimers } from '../src/timers.ts';
import { startCartesiaStandIn } from '../test/speech/tts/cartesia/stand-in.ts';
import { startDeepgramStandIn } from '../test/speech/tts/deepgram/stand-in.ts';
import { startElevenLabsStandIn } from '../test/speech/tts/elevenlabs/stand-in.ts';
import type { StandInHooks, StandInServer } from '../test/speech/tts/stand-ins/common.ts';

const UTTERANCES = Number(process.env.BENCH_UTTERANCES ?? 50);
const KEY = 'bench-key';
const SENTENCES = [
  'Thank you for calling, how can I help you today?',
  'Your appointment is on Monday morning.',
  'Let me check that for you.',
  'Is there anything else I can do?',
];

const percentile = (values: number[], p: number) =>
  [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor(values.length * p))]!;

/** A phone line that notes when each first frame after `expect()` goes out. */
class TimedLine implements CallTransport {
  readonly kind = 'twilio' as const;
  readonly sampleRate = 8000 as const;
  private waiting: ((at: number) => void) | null = null;
  next(): Promise<number> {
    return new Promise((resolve) => (this.waiting = resolve));
  }
  attach(_handlers: TransportHandlers): void {}
  sendAudio(): void {
    const waiting = this.waiting;
    this.waiting = null;
    waiting?.(performance.now());
  }
  sendMark(): void {}
  clear(): void {}
  notify(): void {}
  close(): void {}
}

/** The embedded voice, noting when its first PCM of each synthesis comes out. */
class TimedFlite implements TtsEngine {
  readonly name = 'flite';
  firstPcm: ((at: number) => void) | null = null;
  constructor(private readonly inner: FliteTtsEngine) {}
  async *synthesize(text: string, options: TtsSynthesisOptions): AsyncIterable<PcmChunk> {
    for await (const chunk of this.inner.synthesize(text, options)) {
      const note = this.firstPcm;
      this.firstPcm = null;
      note?.(performance.now());
      yield chunk;
    }
  }
  close(): Promise<void> {
    return this.inner.close();
  }
}

async function run(engine: TtsEngine, firstIn: () => Promise<number>): Promise<number[]> {
  const line = new TimedLine();
  const voice = new AgentVoice({
    transport: line,
    rate: 8000,
    voices: singleVoice(VoiceConfigSchema.parse({ voice_id: 'slt', normalize_for_speech: false }), engine),
    timers: realTimers,
    clock: new CallClock(realTimers),
    replySignal: () => undefined,
    events: {
      queued: () => undefined,
      started: () => undefined,
      ended: () => undefined,
      drained: () => undefined,
      frameSent: () => undefined,
      firstAudio: () => undefined,
      failed: (error) => console.error('voice failed', error),
    },
  });
  const added: number[] = [];
  for (let i = 0; i < UTTERANCES + 2; i++) {
    const provider = firstIn();
    const out = line.next();
    voice.sayAll(SENTENCES[i % SENTENCES.length]!);
    const [inAt, outAt] = await Promise.all([provider, out]);
    // The first two warm the voice (flite's workers, the provider's connection).
    if (i >= 2) added.push(outAt - inAt);
    voice.interrupt({ force: true });
    await new Promise((resolve) => setTimeout(resolve, 30));
  }
  voice.stop();
  return added;
}

const openWebSocket = webSocketOpener(new EgressPolicy(['127.0.0.1/32']));
const rows: { voice: string; median: number; p90: number; n: number }[] = [];
const loadBefore = loadavg()[0]!;

type Start = (key: string, hooks: StandInHooks) => Promise<StandInServer>;
const providers: [string, Start, (url: string) => TtsEngine][] = [
  [
    'elevenlabs',
    startElevenLabsStandIn,
    (url) => new ElevenLabsTtsEngine({ apiKey: KEY, baseUrl: url, openWebSocket }),
  ],
  ['cartesia', startCartesiaStandIn, (url) => new CartesiaTtsEngine({ apiKey: KEY, baseUrl: url, openWebSocket })],
  ['deepgram', startDeepgramStandIn, (url) => new DeepgramTtsEngine({ apiKey: KEY, baseUrl: url, openWebSocket })],
];

for (const [name, start, make] of providers) {
  let note: ((at: number) => void) | null = null;
  const standIn = await start(KEY, {
    firstAudioSent: (at) => {
      const waiting = note;
      note = null;
      waiting?.(at);
    },
  });
  const added = await run(make(standIn.url), () => new Promise((resolve) => (note = resolve)));
  rows.push({
    voice: `${name} (stand-in)`,
    median: percentile(added, 0.5),
    p90: percentile(added, 0.9),
    n: added.length,
  });
  await standIn.close();
}

const flite = new TimedFlite(new FliteTtsEngine({ voice: 'slt' }));
const embedded = await run(flite, () => new Promise((resolve) => (flite.firstPcm = resolve)));
rows.push({
  voice: 'flite (embedded)',
  median: percentile(embedded, 0.5),
  p90: percentile(embedded, 0.9),
  n: embedded.length,
});
await flite.close();

console.log(
  `\nprovider-tts: first audio in → first frame on the line (ms), load average ${loadBefore.toFixed(2)} → ${loadavg()[0]!.toFixed(2)}`,
);
console.log('| voice | utterances | median ms | p90 ms |');
console.log('| --- | --- | --- | --- |');
for (const row of rows) console.log(`| ${row.voice} | ${row.n} | ${row.median.toFixed(2)} | ${row.p90.toFixed(2)} |`);
process.exit(0);
