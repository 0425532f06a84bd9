// npm run bench:provider-stt [-- --utterances 50]
// The service's own added latency with each streaming recogniser: the provider's stand-in (test/
// speech/stt/*/stand-in.ts, no added delay, reading the audio with pocketsphinx) sends its final
// message for an utterance (Deepgram's from_finalize Results, AssemblyAI's formatted end-of-turn
// Turn after a ForceEndpoint); the figure is the time from that send to the service's finalize()
// resolving with the transcript (socket, parsing, schema checks, the stream's bookkeeping). Next to
// it the embedded recogniser's own figure: pocketsphinx, from finalize() to its result. Phone
// audio (flite phrases through 8 kHz μ-law) for all. Prints a Markdown table with the load average.
import { loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { EgressPolicy } from '../src/net/egress.ts';
import { webSocketOpener } from '../src/net/websocket.ts';
import { AssemblyAiSttEngine } from '../src/speech/stt/assemblyai/engine.ts';
import { DeepgramSttEngine } from '../src/speech/stt/deepgram/engine.ts';
import { PocketsphinxEngine } from '../src/speech/stt/pocketsphinx/engine.ts';
import type { SttEngine } from '../src/speech/types.ts';
import { startAssemblyAiStandIn } from '../test/speech/stt/assemblyai/stand-in.ts';
import { startDeepgramStandIn } from '../test/speech/stt/deepgram/stand-in.ts';
import { frames, PHRASES, telephone, voice } from '../test/speech/stt/helpers.ts';
import { markdownTable, stats } from './report.ts';

const { values } = parseArgs({ options: { utterances: { type: 'string', default: '50' } } });
const UTTERANCES = Number(values.utterances);
const RATE = 8000;
const clips = PHRASES.slice(0, 8).map((text) => telephone(voice(text)).samples);
/** After each phrase: shorter than the stand-ins' own pause detection, so the final is the one finalize asks for. */
const TRAILING_SILENCE = new Int16Array(RATE / 10);

interface Sample {
  /** Provider final sent → transcript final in the service (streaming), or finalize → result (embedded). */
  addedMs: number;
  /** finalize() → result, whatever the engine. */
  finalizeMs: number;
}

async function run(engine: SttEngine, sentAt: (() => number[]) | null): Promise<Sample[]> {
  const stream = await engine.open({ sampleRate: RATE, lineEncoding: 'mulaw', language: 'en-US' });
  const samples: Sample[] = [];
  for (let i = 0; i < UTTERANCES; i++) {
    for (const f of frames(clips[i % clips.length]!, RATE)) stream.push(f.slice());
    stream.push(TRAILING_SILENCE);
    const finalsBefore = sentAt?.().length ?? 0;
    const asked = performance.now();
    const result = await stream.finalize();
    const done = performance.now();
    if (!result.text) continue;
    if (!sentAt) {
      samples.push({ addedMs: done - asked, finalizeMs: done - asked });
      continue;
    }
    const sent = sentAt();
    // Only an utterance whose final the stand-in sent for this finalize counts.
    if (sent.length !== finalsBefore + 1) continue;
    samples.push({ addedMs: done - sent.at(-1)!, finalizeMs: done - asked });
  }
  await stream.close();
  return samples;
}

const openWebSocket = webSocketOpener(new EgressPolicy(['127.0.0.0/8']));
const deepgram = await startDeepgramStandIn('bench-key');
const assemblyai = await startAssemblyAiStandIn('bench-key');
const pocketsphinx = new PocketsphinxEngine({ workers: 1 });
// Warm the models (the stand-ins' and the embedded engine's) before measuring.
await run(pocketsphinx, null);

const rows: Record<string, string | number>[] = [];
const row = (engine: string, measured: string, samples: Sample[], pick: (s: Sample) => number) => {
  const s = stats(samples.map(pick));
  rows.push({
    engine,
    measured,
    'p50 ms': s ? s.p50.toFixed(1) : '—',
    'p90 ms': s ? s.p90.toFixed(1) : '—',
    n: s?.num ?? 0,
  });
};
const dg = await run(
  new DeepgramSttEngine({ apiKey: 'bench-key', baseUrl: deepgram.url, openWebSocket, finalGraceMs: 30_000 }),
  () => deepgram.finalsSentAt,
);
row('deepgram', 'added: provider final sent → transcript final', dg, (s) => s.addedMs);
row('deepgram', '(finalize → transcript, stand-in reading included)', dg, (s) => s.finalizeMs);
const aai = await run(
  new AssemblyAiSttEngine({ apiKey: 'bench-key', baseUrl: assemblyai.url, openWebSocket, finalGraceMs: 30_000 }),
  () => assemblyai.finalsSentAt,
);
row('assemblyai', 'added: provider final sent → transcript final', aai, (s) => s.addedMs);
row('assemblyai', '(finalize → transcript, stand-in reading included)', aai, (s) => s.finalizeMs);
const embedded = await run(pocketsphinx, null);
row('pocketsphinx (embedded)', 'finalize → result', embedded, (s) => s.finalizeMs);

process.stdout.write(
  `\nbench:provider-stt — ${UTTERANCES} utterances each, 8 kHz μ-law phone audio; load average ${loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')}\n\n${markdownTable(rows)}\n`,
);
await Promise.all([deepgram.close(), assemblyai.close(), pocketsphinx.close()]);
process.exit(0);
