// The load harness's parts: a target service (the user's, or one started in-process on port 0
// with an agent made for the run), and simulated carrier calls over the real Twilio Media
// Streams protocol, speaking recorded phrases and timing what comes back.
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { z } from 'zod';
import { startService, type RunningService } from '../src/app.ts';
import { muLawDecode, muLawEncode } from '../src/audio/g711.ts';
import { carriesVoice } from '../src/audio/lead-in.ts';
import { FRAME_MS } from '../src/audio/pcm.ts';
import { decodeWav } from '../src/audio/wav.ts';
import { CallRecordSchema, type CallRecord } from '../src/records/record.ts';
import { loadConfig } from '../src/config.ts';
import { placeInboundCall } from '../test/helpers/phone.ts';
import { TEST_TWILIO_TOKEN } from '../test/helpers/service.ts';
import { frameRms, spawnInstantModel, STUB, stubSpeechEngines, type StubSpeech } from './stub-engines.ts';

export interface TargetOptions {
  url?: string | undefined;
  key?: string | undefined;
  engines: 'stub' | 'embedded';
  /** The bench agent's recogniser (embedded engines); the agent default when unset. */
  stt?: 'pocketsphinx' | 'moonshine' | undefined;
  /** The recogniser's model (stt.model: moonshine tiny or base). */
  sttModel?: string | undefined;
  /** End of turn for embedded runs: the agent's default (semantic) or silence at endpointing_ms. */
  endpointing?: 'semantic' | 'silence' | undefined;
  /** An in-process service logs at debug level to this file (each end-of-turn decision, among others). */
  logFile?: string | undefined;
  llmUrl?: string | undefined;
  model?: string | undefined;
  beginMessage?: string;
  ttsFrames?: number;
  /** More configuration of an in-process service (e.g. SIM_NUMBERS). */
  env?: Record<string, string>;
}

/** One answered turn's latency parts as the service measured them (src/call/latency.ts TurnLatency). */
export const TurnPartsSchema = z.object({
  callId: z.string(),
  turn: z.number(),
  /** First agent audio out, epoch ms. */
  at: z.number(),
  e2e: z.number(),
  asr: z.number().nullable(),
  llm: z.number().nullable(),
  llmSpeakable: z.number().nullable(),
  tts: z.number().nullable(),
});
export type TurnParts = z.infer<typeof TurnPartsSchema>;

/** What bench:serve-stub's stats URL answers: the service process alone. */
export const ServiceStatsSchema = z.object({
  t: z.number(),
  calls: z.number(),
  rss: z.number(),
  heapUsed: z.number(),
  external: z.number(),
  cpuUserUs: z.number(),
  cpuSystemUs: z.number(),
  /** Frames the stub TTS has made since the service started. */
  framesEmitted: z.number(),
  /** Event-loop delay since the last reset, ms. */
  loopDelayMs: z.object({
    p50: z.number(),
    p90: z.number(),
    p95: z.number(),
    p99: z.number(),
    max: z.number(),
    count: z.number(),
  }),
  /** Turns answered since the last reset. */
  turns: z.array(TurnPartsSchema).default([]),
});
export type ServiceStats = z.infer<typeof ServiceStatsSchema>;

/** Reads (or with `reset`, restarts the event-loop histogram of) bench:serve-stub's stats. */
export async function serviceStats(statsUrl: string, o: { gc?: boolean; reset?: boolean } = {}): Promise<ServiceStats> {
  const res = await fetch(o.reset ? `${statsUrl}/reset` : `${statsUrl}/${o.gc ? '?gc=1' : ''}`, {
    method: o.reset ? 'POST' : 'GET',
  });
  return ServiceStatsSchema.parse(await res.json());
}

export interface Target {
  url: string;
  key: string;
  number: string;
  /** The bench agent (it answers `number`; browser calls name it). */
  agentId: string;
  /** Set when the service runs in this process with stub engines. */
  stub: StubSpeech | null;
  service: RunningService | null;
  close(): Promise<void>;
}

/** The target's JSON API with the run's key; an answer of 300 or more is thrown. */
export function targetApi(
  target: Pick<Target, 'url' | 'key'>,
): (method: string, path: string, body?: unknown) => Promise<unknown> {
  return async (method, path, body) => {
    const res = await fetch(`${target.url}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${target.key}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    if (res.status >= 300) throw new Error(`${method} ${path} answered ${res.status}: ${await res.text()}`);
    return res.json();
  };
}

/** What a bench reads of each record in the target's call list. */
const ListedCallsPage = z.object({
  calls: z.array(
    z.object({
      call_id: z.string(),
      call_from: z.string().nullable().optional(),
      metadata: z.record(z.string(), z.unknown()).optional(),
    }),
  ),
  next_cursor: z.string().nullable(),
});
export type ListedCall = z.infer<typeof ListedCallsPage>['calls'][number];

/** Every call record of the run's organization, page by page. */
export async function listCalls(target: Pick<Target, 'url' | 'key'>): Promise<ListedCall[]> {
  const api = targetApi(target);
  const all: ListedCall[] = [];
  let cursor: string | null = null;
  do {
    const page = ListedCallsPage.parse(await api('POST', '/v2/calls/list', { limit: 500, pagination_key: cursor }));
    all.push(...page.calls);
    cursor = page.next_cursor;
  } while (cursor);
  return all;
}

/** Places an outbound call through the API and returns its record once the call is over. */
export async function outboundCallRecord(
  api: ReturnType<typeof targetApi>,
  call: { call_to: string; agent_id: string },
): Promise<CallRecord> {
  const placed = (await api('POST', '/v2/calls', { call_from: '+14155550100', ...call })) as { call_id: string };
  for (let i = 0; i < 3000; i++) {
    const record = CallRecordSchema.parse(await api('GET', `/v2/calls/${placed.call_id}`));
    if (record.call_status !== 'registered' && record.call_status !== 'ongoing') return record;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`call ${placed.call_id} did not end`);
}

/** Caller's last speech frame → VAD end (stub: silence hangover; endpointing set no longer). */
export const STUB_ENDPOINT_MS = STUB.silenceMs;

export async function startTarget(o: TargetOptions): Promise<Target> {
  const cleanups: (() => Promise<void>)[] = [];
  let url = o.url;
  let key = o.key ?? process.env.API_KEY ?? '';
  let service: RunningService | null = null;
  const stub = o.url === undefined && o.engines === 'stub' ? stubSpeechEngines(o.ttsFrames) : null;
  if (url === undefined) {
    const dataDir = mkdtempSync(join(tmpdir(), 'voicecall-bench-'));
    key = 'bench-key-0123456789-0123456789-0123';
    const config = loadConfig({
      PORT: '0',
      HOST: '127.0.0.1',
      DATA_DIR: dataDir,
      API_KEYS: `bench:${key}`,
      LOG_LEVEL: 'error',
      RATE_LIMIT_PER_MINUTE: '0',
      AGENTS_FILE: '',
      EGRESS_ALLOW: '127.0.0.0/8',
      TWILIO_AUTH_TOKEN: TEST_TWILIO_TOKEN,
      ...o.env,
    });
    const logger = o.logFile
      ? pino({ level: 'debug' }, pino.destination({ dest: o.logFile, sync: true }))
      : pino({ level: 'error' });
    service = await startService({ config, logger, ...(stub ? { speech: stub } : {}) });
    const s = service;
    cleanups.push(async () => {
      await s.close();
      rmSync(dataDir, { recursive: true, force: true });
    });
    url = service.url;
  }
  if (!key) throw new Error('--key (or API_KEY) is needed with --url');
  let llm: { base_url: string; model: string };
  if (o.llmUrl) llm = { base_url: o.llmUrl, model: o.model ?? 'default' };
  else if (o.engines === 'stub') {
    const model = await spawnInstantModel();
    cleanups.unshift(model.close);
    llm = { base_url: model.url, model: 'stub' };
  } else llm = { base_url: `${url}/demo/llm/v1`, model: 'demo-front-desk' };
  const number = `+1555${String(Math.floor(Math.random() * 1e7)).padStart(7, '0')}`;
  const agentId = `bench-${Date.now()}`;
  const res = await fetch(`${url}/v2/agents`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      agent_id: agentId,
      agent_name: 'Load bench',
      llm,
      system_prompt: 'You are a front desk. Answer in one short sentence.',
      begin_message: o.beginMessage ?? 'Hello, how can I help?',
      // The stub VAD already waits STUB.silenceMs of quiet; endpointing adds nothing beyond it. Silence
      // mode with stub engines: semantic end of turn (the default) would wait its min_ms (250 ms) past
      // the hangover and be counted as the runtime's overhead.
      endpointing_ms: o.engines === 'stub' ? STUB_ENDPOINT_MS : 500,
      ...(o.engines === 'stub' || o.endpointing === 'silence' ? { endpointing: { mode: 'silence' } } : {}),
      inbound_numbers: [number],
      ...(o.stt || o.sttModel
        ? {
            stt: {
              ...(o.stt ? { engine: o.stt } : {}),
              ...(o.sttModel ? { model: o.sttModel } : {}),
              language: 'en-US',
            },
          }
        : {}),
    }),
  });
  if (res.status !== 201) throw new Error(`creating the bench agent answered ${res.status}: ${await res.text()}`);
  return {
    url,
    key,
    number,
    agentId,
    stub,
    service,
    close: async () => {
      for (const c of cleanups) await c();
    },
  };
}

/** Where the samples louder than `floor` begin and end: [from, to), empty when none is. */
export function loudBounds(samples: Int16Array, floor: number): { from: number; to: number } {
  let from = 0;
  let to = samples.length;
  while (from < to && Math.abs(samples[from]!) < floor) from++;
  while (to > from && Math.abs(samples[to - 1]!) < floor) to--;
  return { from, to };
}

/** `samples` without the quiet (|sample| < floor) at either end, so a caller's first and last frames are speech. */
export function trimQuiet(samples: Int16Array, floor: number): Int16Array {
  const { from, to } = loudBounds(samples, floor);
  return samples.slice(from, to);
}

/**
 * The 8 kHz fixture phrases as μ-law, trailing quiet cut so the last frame sent is speech; with `oneStubTurn`, only
 * those the stub VAD hears as one turn (longestInnerPauseMs).
 */
export function loadPhrases(options: { oneStubTurn?: boolean } = {}): Uint8Array[] {
  const dir = join(import.meta.dirname, '..', 'media', 'fixtures');
  return readdirSync(dir)
    .filter((f) => f.endsWith('.8k-ulaw.wav'))
    .sort()
    .map((f) => decodeWav(readFileSync(join(dir, f)), 8000).samples)
    .filter((pcm) => !options.oneStubTurn || longestInnerPauseMs(pcm) < STUB.silenceMs)
    .map((pcm) => {
      let end = pcm.length;
      for (let at = Math.floor(pcm.length / 160) * 160; at >= 0; at -= 160) {
        const frame = pcm.subarray(at, at + 160);
        if (frame.length > 0 && frameRms(frame) > STUB.speechRms * 2) {
          end = at + frame.length;
          break;
        }
      }
      return muLawEncode(pcm.subarray(0, end));
    });
}

/**
 * The longest run of 20 ms frames the stub VAD hears as quiet between two it hears as speech. A phrase with a pause of
 * the stub's end of turn or more is several turns to it ("next … monday morning … works" is three, the last said over
 * the answer to the second and no turn at all): a bench that waits for one answer per phrase either misses it or takes
 * the tail of the previous answer for it (a voice to voice of a few ms).
 */
function longestInnerPauseMs(pcm: Int16Array): number {
  let longest = 0;
  let quiet = 0;
  let heard = false;
  for (let at = 0; at + 160 <= pcm.length; at += 160) {
    if (frameRms(pcm.subarray(at, at + 160)) > STUB.speechRms) {
      if (heard) longest = Math.max(longest, quiet);
      heard = true;
      quiet = 0;
    } else quiet++;
  }
  return longest * FRAME_MS;
}

export interface CallResult {
  callId: string;
  /** Per turn: caller's last speech frame sent → first agent media message received, ms. */
  v2v: number[];
  /** Per turn, as v2v: when that first agent media message arrived, epoch ms (to pair with the service's own parts). */
  answeredAt: number[];
  /** Per turn: caller's last speech frame sent → the first agent frame that carries voice (a caller hears it), ms. */
  v2vVoiced: number[];
  /**
   * Stub engines only, per turn: the caller's frame that completes the stub VAD's hangover sent →
   * first agent media message received, ms. The v2v less the hangover, except that a caller whose
   * own event loop sent its quiet frames late is not charged to the service.
   */
  fromHangoverEnd: number[];
  /** |gap − 20 ms| between agent frames once the pacer's lead is filled, ms. */
  jitter: number[];
  /** The same, for gaps no stall of the callers' own event loop touched (their arrival times are the service's). */
  jitterCallersOnTime: number[];
  /** Agent frames that arrived after the far side would have started playing them (underrun). */
  late: number;
  framesReceived: number;
  /** `clear` messages: the service cut its own audio (barge-in, an apology), so queued frames never came. */
  clears: number;
  turnsMissed: number;
  record: CallRecord | null;
  /** Hang-up → record final, as polled every 50 ms through the API. */
  finalizeMs: number | null;
  /** Caller's inbound audio behind the wall clock at the end of the call, ms. */
  sendLagMs: number | null;
  error: string | null;
}

export interface CallScript {
  phrases: Uint8Array[];
  /** Conversation time after the greeting, ms; at least one turn is taken. */
  durationMs: number;
  /** Caller pauses before each phrase, ms [min, max]. */
  pauseMs: [number, number];
  /** Waited on after the greeting (all calls idle together, for memory sampling). */
  barrier?: Promise<void>;
  onIdle?: () => void;
  /** The callers' event-loop stalls, to tell the service's pacing from the harness's own lag. */
  stalls?: LoopStalls;
  /** Quiet frames after speech before the (stub) VAD ends the turn: times fromHangoverEnd. */
  hangoverFrames?: number;
  seed: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Where the callers' own event loop ran late: a frame that arrived then was timed late by the
 * harness, not by the service. A 1 ms interval notes every tick that came more than
 * `thresholdMs` after its time.
 */
export class LoopStalls {
  private readonly starts: number[] = [];
  private readonly ends: number[] = [];
  private timer: NodeJS.Timeout | undefined;
  private last = 0;

  constructor(readonly thresholdMs = 2) {}

  start(): void {
    this.last = performance.now();
    this.timer = setInterval(() => {
      const now = performance.now();
      if (now - this.last > 1 + this.thresholdMs) {
        this.starts.push(this.last + 1);
        this.ends.push(now);
      }
      this.last = now;
    }, 1);
  }

  stop(): void {
    clearInterval(this.timer);
  }

  get count(): number {
    return this.starts.length;
  }

  /** Whether a stall overlaps [from, to]. */
  touches(from: number, to: number): boolean {
    // The first stall that ends at or after `from` (ends are in order).
    let lo = 0;
    let hi = this.ends.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.ends[mid]! < from) lo = mid + 1;
      else hi = mid;
    }
    return lo < this.starts.length && this.starts[lo]! <= to;
  }
}

/** Frames received per agent reply: jitter once 5 frames (80 ms lead + 1) are out, and underruns. */
export function pacing(
  arrivals: readonly number[],
  from: number,
  to: number,
  out: { jitter: number[]; jitterCallersOnTime: number[]; late: number },
  stalls?: LoopStalls,
): void {
  let playEnd = 0;
  for (let i = from; i < to; i++) {
    const at = arrivals[i]!;
    if (i > from && at > playEnd + 1) out.late++;
    playEnd = Math.max(playEnd, at) + 20;
    if (i - from < 5) continue;
    const jitter = Math.abs(at - arrivals[i - 1]! - 20);
    out.jitter.push(jitter);
    // A stall just before the earlier arrival may have delayed it too: look 3 ms back.
    if (stalls && !stalls.touches(arrivals[i - 1]! - 3, at)) out.jitterCallersOnTime.push(jitter);
  }
}

/** A call's result before anything was heard: every series empty, every count zero (runCall's and the SIP bench's). */
export function emptyCallResult(): CallResult {
  return {
    callId: '',
    v2v: [],
    v2vVoiced: [],
    answeredAt: [],
    fromHangoverEnd: [],
    jitter: [],
    jitterCallersOnTime: [],
    late: 0,
    framesReceived: 0,
    clears: 0,
    turnsMissed: 0,
    record: null,
    finalizeMs: null,
    sendLagMs: null,
    error: null,
  };
}

/** The callers' pauses and phrase choices, repeatable from a call's seed (a linear congruential generator). */
export function seededRandom(seed: number): () => number {
  let rnd = seed;
  return () => (rnd = (rnd * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
}

export async function runCall(target: Target, script: CallScript): Promise<CallResult> {
  const result = emptyCallResult();
  const arrivals: number[] = [];
  /** Arrival times of the agent frames that carry a voice, not its lead-in (audio/lead-in.ts carriesVoice). */
  const voicedArrivals: number[] = [];
  const random = seededRandom(script.seed);
  const waitFor = async (cond: () => boolean, timeoutMs: number) => {
    const until = performance.now() + timeoutMs;
    while (!cond()) {
      if (performance.now() > until) return false;
      // Arrival times are taken as messages come; polling only paces the script, so 25 ms is plenty.
      await sleep(25);
    }
    return true;
  };
  let idled = false;
  const idle = () => {
    if (!idled) script.onIdle?.();
    idled = true;
  };
  try {
    // No message history: a load run only needs arrival times, and keeping every message costs GC.
    const placed = await placeInboundCall(target.url, target.number, undefined, { history: false });
    const caller = placed.caller;
    result.callId = placed.callId;
    let marksSent = 0;
    let marksEchoed = 0;
    /** Agent messages played to their end (their end marks echoed by the simulated phone). */
    let played = 0;
    caller.on('message', (m) => {
      if (m.event === 'media') {
        const at = performance.now();
        arrivals.push(at);
        const payload = Buffer.from((m.media as { payload?: string } | undefined)?.payload ?? '', 'base64');
        if (carriesVoice(muLawDecode(payload), 8000)) voicedArrivals.push(at);
      } else if (m.event === 'mark') marksSent++;
    });
    caller.on('clear', () => result.clears++);
    caller.on('mark', (name) => {
      marksEchoed++;
      if (name.endsWith(':end')) played++;
    });
    // The caller speaks once the agent's message has played, told by its end mark as a real
    // caller hears it end; a quiet gap would mistake a stall of the service for the end, talk over
    // the rest and have it cleared (counted as dropped).
    const heard = (n: number) => played >= n || caller.closed;
    if (!(await waitFor(() => heard(1), 20_000))) throw new Error('no greeting');
    pacing(arrivals, 0, arrivals.length, result, script.stalls);
    idle();
    if (script.barrier) await script.barrier;
    const end = performance.now() + script.durationMs;
    let turn = 0;
    do {
      if (caller.closed) break;
      const [lo, hi] = script.pauseMs;
      await caller.pause(lo + random() * (hi - lo));
      await caller.speak(script.phrases[(script.seed + turn++) % script.phrases.length]!);
      const sentAt = performance.now();
      const lastSpeechFrame = caller.framesSent - 1;
      const before = arrivals.length;
      const playedBefore = played;
      if (!(await waitFor(() => arrivals.length > before || caller.closed, 15_000)) || arrivals.length === before) {
        result.turnsMissed++;
        continue;
      }
      result.v2v.push(arrivals[before]! - sentAt);
      const voicedAt = () => voicedArrivals.find((at) => at >= arrivals[before]!);
      await waitFor(() => voicedAt() !== undefined || caller.closed, 5_000);
      const voiced = voicedAt();
      if (voiced !== undefined) result.v2vVoiced.push(voiced - sentAt);
      result.answeredAt.push(performance.timeOrigin + arrivals[before]!);
      if (script.hangoverFrames !== undefined) {
        const hangoverEnd = caller.frameSentAt(lastSpeechFrame + script.hangoverFrames);
        if (hangoverEnd !== undefined && hangoverEnd <= arrivals[before]!)
          result.fromHangoverEnd.push(arrivals[before]! - hangoverEnd);
      }
      await waitFor(() => heard(playedBefore + 1), 30_000);
      pacing(arrivals, before, arrivals.length, result, script.stalls);
    } while (performance.now() < end);
    // How far the simulated phone's 20 ms send schedule fell behind real time (harness starved).
    result.sendLagMs = caller.now() - caller.framesSent * 20;
    // Hang up once what the agent said has played (its marks echoed), as a caller would.
    await waitFor(() => marksEchoed >= marksSent || caller.closed, 5_000);
    await caller.hangUp();
    const hungUpAt = performance.now();
    result.framesReceived = arrivals.length;
    // The record is final once the session finalized; read it through the API like a client.
    for (let i = 0; i < 600; i++) {
      const res = await fetch(`${target.url}/v2/calls/${placed.callId}`, {
        headers: { authorization: `Bearer ${target.key}` },
      });
      const record = CallRecordSchema.parse(await res.json());
      if (record.call_status !== 'registered' && record.call_status !== 'ongoing') {
        result.record = record;
        result.finalizeMs = performance.now() - hungUpAt;
        break;
      }
      await sleep(50);
    }
  } catch (error) {
    result.error = (error as Error).message;
  } finally {
    idle(); // a call that failed before its greeting must not hold the others at the barrier
  }
  return result;
}

/**
 * The runtime's own part of each turn: voice-to-voice less the stub hangover and the parts the
 * service measured in that turn (recogniser, model request → first speakable chunk, TTS first
 * audio). A harness turn is paired with the service's turn of the same call whose first audio
 * went out nearest to when the harness received it, within `windowMs` either way (the two
 * processes' clocks may differ by a few ms; a call's turns are seconds apart).
 */
export function ownOverhead(
  results: Pick<CallResult, 'callId' | 'v2v' | 'answeredAt'>[],
  turns: TurnParts[],
  hangoverMs: number,
  windowMs = 200,
): number[] {
  const byCall = new Map<string, TurnParts[]>();
  for (const t of turns) byCall.set(t.callId, [...(byCall.get(t.callId) ?? []), t]);
  const out: number[] = [];
  for (const r of results) {
    const mine = byCall.get(r.callId) ?? [];
    r.v2v.forEach((v2v, i) => {
      const answered = r.answeredAt[i] ?? NaN;
      let match: TurnParts | undefined;
      for (const t of mine)
        if (
          Math.abs(answered - t.at) <= windowMs &&
          (!match || Math.abs(answered - t.at) < Math.abs(answered - match.at))
        )
          match = t;
      if (match) out.push(v2v - hangoverMs - (match.asr ?? 0) - (match.llmSpeakable ?? 0) - (match.tts ?? 0));
    });
  }
  return out;
}
