// npm run bench:provider-s2s
// The service's own added latency with a speech-to-speech model: a phone call (Twilio media stream)
// to the in-process service, whose agent's model is a provider's stand-in at zero delay (OpenAI Realtime,
// then Gemini Live; each answers every turn at once, echoing what it heard, in 20 ms audio pieces).
// Per turn: the moment the stand-in sent the answer's first audio piece → the moment its first media frame reached
// the caller's socket; that is everything the service adds (parse, decode, frame, pace, send), the
// model's own time left out. Median and p90 over the turns, with the load average.
// Writes JSON and Markdown under artifacts/bench/.
import { loadavg } from 'node:os';
import { agentFinished, fixtureUlaw, placeInboundCall } from '../test/helpers/phone.ts';
import { startTestService } from '../test/helpers/service.ts';
import { GeminiLiveStandIn } from '../test/llm/realtime/gemini-stand-in.ts';
import { OpenAiRealtimeStandIn, type StandInResponse } from '../test/llm/realtime/openai-stand-in.ts';
import { markdownTable, writeArtifacts } from './report.ts';

const TURNS = Number(process.env.S2S_TURNS ?? 12);
const PHRASES = ['01-my-name-is-john', '04-yes-please', '08-goodbye', '09-i-want-to-cancel'];

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

interface S2sStandIn {
  readonly url: string;
  readonly responses: StandInResponse[];
  close(): Promise<void>;
}

const PROVIDERS: {
  name: string;
  start: () => Promise<S2sStandIn>;
  llm: (url: string) => Record<string, unknown>;
}[] = [
  {
    name: 'openai-realtime',
    start: () => OpenAiRealtimeStandIn.start({ chunkMs: 20 }),
    llm: (url) => ({ engine: 'openai-realtime', base_url: url, model: 'gpt-realtime' }),
  },
  {
    name: 'gemini-live',
    start: () => GeminiLiveStandIn.start({ chunkMs: 20 }),
    llm: (url) => ({ engine: 'gemini-live', base_url: url, model: 'gemini-live-2.5-flash-preview' }),
  },
];

const loadStart = loadavg();
const t = await startTestService();
const rows: Record<string, string | number>[] = [];
const perTurn: Record<string, number[]> = {};
for (const [index, provider] of PROVIDERS.entries()) {
  const standIn = await provider.start();
  const number = `+1555010009${index}`;
  const created = await t.request('POST', '/v2/agents', {
    body: {
      agent_id: `bench-s2s-${provider.name}`,
      agent_name: `Bench speech-to-speech ${provider.name}`,
      inbound_numbers: [number],
      begin_message: 'Hello.',
      stt: { engine: 'pocketsphinx', language: 'en-US' },
      llm: provider.llm(standIn.url),
    },
  });
  if (created.status !== 201) throw new Error(`agent not created: ${created.text}`);

  const { caller } = await placeInboundCall(t.url, number);
  /** Wall ms each media message from the service reached the caller's socket. */
  const mediaAt: number[] = [];
  caller.on('message', (message) => {
    if (message.event === 'media') mediaAt.push(Date.now());
  });
  await agentFinished(caller, { after: 0, timeoutMs: 30_000 });
  for (let turn = 0; turn < TURNS; turn++) {
    const before = caller.played.length;
    await caller.speak(fixtureUlaw(PHRASES[turn % PHRASES.length]!));
    await agentFinished(caller, { after: before, timeoutMs: 30_000 });
  }
  await caller.hangUp();

  const added = standIn.responses.flatMap((r) => {
    if (r.firstAudioAt === null) return [];
    const first = mediaAt.find((at) => at >= r.firstAudioAt!);
    return first === undefined ? [] : [first - r.firstAudioAt];
  });
  await standIn.close();
  perTurn[provider.name] = added;
  rows.push({
    provider: `${provider.name} (stand-in, 0 delay)`,
    line: 'twilio μ-law 8 kHz',
    turns: added.length,
    'added p50 ms': percentile(added, 50),
    'added p90 ms': percentile(added, 90),
    'added max ms': Math.max(...added),
  });
}
const loadEnd = loadavg();
await t.stop();

const load = `load average ${loadStart.map((l) => l.toFixed(2)).join(' ')} → ${loadEnd.map((l) => l.toFixed(2)).join(' ')}`;
const markdown = `${markdownTable(rows)}\n\n${load}\n`;
writeArtifacts('provider-s2s', { rows, perTurn, loadStart, loadEnd }, markdown);
process.stdout.write(
  `${markdown}\n${Object.entries(perTurn)
    .map(([name, added]) => `${name} per turn: ${added.join(', ')}`)
    .join('\n')}\n`,
);
