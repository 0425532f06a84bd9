// npm run bench:calls -- --transport sip [--calls 50] [--duration 20] [--engines stub|embedded]
// The SIP path beside the Twilio path, in one run, stub engines (or, in process, the embedded ones: then the figure
// is each path's voice to voice, the caller's last speech frame to the agent's first packet and first voiced one):
// an in-process service listening on SIP_LISTEN at
// 127.0.0.1 with a trunk whose allowed address is 127.0.0.1 takes N concurrent Twilio-protocol calls (runCall, as
// bench:calls does), then N concurrent SIP calls. Each SIP caller is a phone on the project's own user agent
// (src/carriers/sip/user-agent.ts, as test/carriers/sip/driver.ts's phones are): INVITE, then its own 20 ms μ-law
// RTP (phrases, silence between) and the agent's RTP back. The project's own phone rather than SIPp: SIPp plays a
// fixed pcap and cannot wait for the agent's answer before speaking, nor time each packet it receives. Arrival
// times are taken at the phone's RTP socket itself (before any jitter buffer), so the jitter is the service's
// sending. A SIP phone has no marks: the agent's utterance has played once no packet came for QUIET_END_MS (the
// service sends nothing while silent, src/carriers/sip/rtp-sender.ts). The service answers at most 20 INVITEs at
// once and 10 a second from one address (src/carriers/sip/flood.ts): an INVITE answered 503 is tried again after a
// second, so the calls ramp up at that pace and wait for each other at a barrier. Against bench:serve-stub
// --workers N --sip, --sip names every worker's address and the phones take them in turn (one origination URI per
// worker, as a trunk would have).
// Per path: runtime overhead per turn (v2v − the stub's 200 ms hangover, and from the caller's frame that ends it;
// and the runtime's own, less the STT, model and TTS parts the service measured in that turn, as bench:calls reports),
// send jitter |gap − 20 ms| after the first 5 frames of each reply (all gaps, and those no stall of the callers' loop
// touched), late frames, dropped frames (stub TTS frames made − frames received), errors. JSON and Markdown under
// artifacts/bench/.
import { loadavg } from 'node:os';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { muLawDecode } from '../src/audio/g711.ts';
import { carriesVoice } from '../src/audio/lead-in.ts';
import { cryptoRandomHex } from '../src/clock.ts';
import { parseRtp } from '../src/carriers/sip/rtp-packet.ts';
import { RtpPortPool, type BoundRtpPort } from '../src/carriers/sip/rtp-ports.ts';
import { PCMU } from '../src/carriers/sip/rtp-sender.ts';
import { SipUserAgent, type SipCall } from '../src/carriers/sip/user-agent.ts';
import { SipSocketWire } from '../src/carriers/sip/wire.ts';
import { realTimers } from '../src/timers.ts';
import { freeUdpPort } from '../test/helpers/net.ts';
import {
  emptyCallResult,
  LoopStalls,
  loadPhrases,
  ownOverhead,
  pacing,
  runCall,
  seededRandom,
  serviceStats,
  listCalls,
  startTarget,
  STUB_ENDPOINT_MS,
  type CallResult,
  type ServiceStats,
  type Target,
  type TurnParts,
} from './harness.ts';
import { markdownTable, type SeriesStats, stats, writeArtifacts } from './report.ts';

const Args = z.object({
  transport: z.literal('sip'),
  engines: z.enum(['stub', 'embedded']).default('stub'),
  calls: z.coerce.number().int().min(1).max(400).default(50),
  duration: z.coerce.number().positive().max(3600).default(20),
  /** Calls opened per second while ramping up (the SIP calls also wait out 503s). */
  ramp: z.coerce.number().positive().default(100),
  /** Out of process: bench:serve-stub -- --sip prints these (url, key, stats, sip). */
  url: z.url().optional(),
  key: z.string().optional(),
  'stats-url': z.url().optional(),
  /** One address per service process (serve-stub --workers prints them comma-separated): phones take them in turn. */
  sip: z
    .string()
    .regex(/^udp:127\.0\.0\.1:\d+(,udp:127\.0\.0\.1:\d+)*$/)
    .optional(),
});
const { values } = parseArgs({
  options: Object.fromEntries(
    ['transport', 'calls', 'duration', 'ramp', 'engines', 'url', 'key', 'stats-url', 'sip'].map((k) => [
      k,
      { type: 'string' as const },
    ]),
  ),
});
const args = Args.parse({
  transport: values.transport,
  engines: values.engines,
  calls: values.calls,
  duration: values.duration,
  ramp: values.ramp,
  url: values.url,
  key: values.key,
  'stats-url': values['stats-url'],
  sip: values.sip,
});
if (args.url !== undefined && (args.sip === undefined || args['stats-url'] === undefined))
  throw new Error('--url needs --sip and --stats-url (bench:serve-stub -- --sip prints them)');
if (args.url !== undefined && args.engines !== 'stub')
  throw new Error('--url drives bench:serve-stub, whose engines are the stubs: the embedded engines run in process');
const statsUrl = args['stats-url'];
const stub = args.engines === 'stub';

const HOST = '127.0.0.1';
/** The service's media ports and the phones' (two ports a call each). */
const SERVICE_RTP = { low: 52000, high: 52999 };
const PHONE_RTP = { low: 53000, high: 53999 };
/** No agent packet for this long: its utterance has played (its packets are 20 ms apart). */
const QUIET_END_MS = 200;
const FRAME_MS = 20;
const FRAME = 160;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** One SIP phone's call: frames out every 20 ms from a queue (silence when empty), agent packets timed on arrival. */
class SipPhoneLine {
  readonly arrivals: number[] = [];
  readonly voicedArrivals: number[] = [];
  private readonly queue: Int16Array[] = [];
  private readonly sendTimes: number[] = [];
  private startedAt = 0;
  private timer: NodeJS.Timeout | undefined;
  private readonly silence = new Int16Array(FRAME);
  ended = false;

  constructor(
    private readonly call: SipCall,
    socket: BoundRtpPort['socket'],
  ) {
    socket.on('message', (datagram: Buffer) => {
      const at = performance.now();
      const packet = parseRtp(datagram);
      if (!packet || (packet.payloadType !== 0 && packet.payloadType !== 8)) return;
      this.arrivals.push(at);
      if (carriesVoice(muLawDecode(packet.payload), 8000)) this.voicedArrivals.push(at);
    });
    call.transport.attach({
      audio: () => undefined,
      mark: () => undefined,
      dtmf: () => undefined,
      hangup: () => this.stop(),
    });
  }

  get framesSent(): number {
    return this.sendTimes.length;
  }

  frameSentAt(index: number): number | undefined {
    return this.sendTimes[index];
  }

  start(): void {
    this.startedAt = performance.now();
    const tick = (): void => {
      if (this.ended) return;
      // Every frame that is due goes now: a late tick catches up, as a phone's clock would.
      while (this.startedAt + this.sendTimes.length * FRAME_MS <= performance.now()) {
        this.call.transport.sendAudio(this.queue.shift() ?? this.silence);
        this.sendTimes.push(performance.now());
      }
      this.timer = setTimeout(tick, this.startedAt + this.sendTimes.length * FRAME_MS - performance.now());
    };
    tick();
  }

  /** μ-law 8 kHz: queued as frames; resolves when the last has gone. */
  async speak(mulaw: Uint8Array): Promise<void> {
    const pcm = muLawDecode(mulaw);
    for (let at = 0; at < pcm.length; at += FRAME) {
      const frame = new Int16Array(FRAME);
      frame.set(pcm.subarray(at, at + FRAME));
      this.queue.push(frame);
    }
    while (this.queue.length > 0 && !this.ended) await sleep(FRAME_MS);
  }

  async pause(ms: number): Promise<void> {
    await sleep(ms);
  }

  /** The agent's utterance started at or after arrival `from` has played: no packet for QUIET_END_MS. */
  playedAfter(from: number): boolean {
    return this.arrivals.length > from && performance.now() - this.arrivals.at(-1)! > QUIET_END_MS;
  }

  /** Behind real time at the end (harness starvation). */
  sendLag(): number {
    return performance.now() - this.startedAt - this.sendTimes.length * FRAME_MS;
  }

  stop(): void {
    this.ended = true;
    clearTimeout(this.timer);
  }

  hangUp(): void {
    this.stop();
    this.call.transport.close('user_hangup');
  }
}

interface Phones {
  ua: SipUserAgent<null>;
  wire: SipSocketWire;
  /** The port the last dial bound (ua.dial binds before its first await). */
  lastBind: () => Promise<BoundRtpPort>;
}

async function startPhones(): Promise<Phones> {
  const wire = await SipSocketWire.listen({
    udp: { host: HOST, port: 0 },
    onMessage: (m, from) => ua.receive(m, from),
  });
  const pool = new RtpPortPool(PHONE_RTP, HOST);
  const bind = pool.bind.bind(pool);
  let last: Promise<BoundRtpPort> = Promise.reject(new Error('no dial yet'));
  last.catch(() => undefined);
  pool.bind = () => (last = bind());
  const ua: SipUserAgent<null> = new SipUserAgent<null>({
    wire,
    timers: realTimers,
    random: cryptoRandomHex,
    publicHost: HOST,
    sentBy: () => `${HOST}:${wire.address().udp}`,
    ports: pool,
    // The phones send and time 20 ms μ-law packets (PACKET_BYTES), as phones from the phone network do: offered
    // G.722, the service would answer in it.
    codecs: [PCMU],
    admit: () => ({ verdict: 'refuse' }),
    onCall: () => undefined,
  });
  return { ua, wire, lastBind: () => last };
}

interface SipScript {
  phrases: Uint8Array[];
  durationMs: number;
  pauseMs: [number, number];
  barrier: Promise<void>;
  onIdle: () => void;
  stalls: LoopStalls;
  seed: number;
}

/** One SIP call, timed as runCall times a Twilio one. */
async function sipCall(target: Target, phones: Phones, sipPorts: number[], script: SipScript): Promise<CallResult> {
  const sipPort = sipPorts[script.seed % sipPorts.length]!;
  const result = emptyCallResult();
  const random = seededRandom(script.seed);
  const waitFor = async (cond: () => boolean, timeoutMs: number) => {
    const until = performance.now() + timeoutMs;
    while (!cond()) {
      if (performance.now() > until) return false;
      await sleep(25);
    }
    return true;
  };
  let idled = false;
  const idle = () => {
    if (!idled) script.onIdle();
    idled = true;
  };
  let line: SipPhoneLine | undefined;
  try {
    let call: SipCall | undefined;
    let socket: BoundRtpPort['socket'] | undefined;
    for (let attempt = 0; attempt < 60 && !call; attempt++) {
      const dial = phones.ua.dial({
        uri: `sip:${target.number}@${HOST}:${sipPort}`,
        from: `sip:+1415555${String(script.seed).padStart(4, '0')}@${HOST}`,
        peer: { transport: 'udp', address: HOST, port: sipPort },
      });
      const bound = phones.lastBind();
      // Arrival times from the first packet: the listener goes on as soon as the port is bound.
      void bound.then((b) => (socket = b.socket)).catch(() => undefined);
      const answer = await dial.result;
      if (answer.outcome === 'answered') call = answer.call;
      else if (answer.outcome === 'rejected' && answer.status === 503) await sleep(1000);
      else throw new Error(`the service did not answer: ${JSON.stringify(answer)}`);
    }
    if (!call || !socket) throw new Error('the service answered 503 for a minute');
    result.callId = call.dialog.callId;
    line = new SipPhoneLine(call, socket);
    const l = line;
    line.start();
    if (!(await waitFor(() => l.playedAfter(0) || l.ended, 20_000)) || l.ended) throw new Error('no greeting');
    pacing(l.arrivals, 0, l.arrivals.length, result, script.stalls);
    idle();
    await script.barrier;
    const end = performance.now() + script.durationMs;
    let turn = 0;
    do {
      if (l.ended) break;
      const [lo, hi] = script.pauseMs;
      await l.pause(lo + random() * (hi - lo));
      await l.speak(script.phrases[(script.seed + turn++) % script.phrases.length]!);
      const lastSpeechFrame = l.framesSent - 1;
      const sentAt = l.frameSentAt(lastSpeechFrame)!;
      const before = l.arrivals.length;
      if (!(await waitFor(() => l.arrivals.length > before || l.ended, 15_000)) || l.arrivals.length === before) {
        result.turnsMissed++;
        continue;
      }
      const first = l.arrivals[before]!;
      result.v2v.push(first - sentAt);
      const voicedAt = () => l.voicedArrivals.find((at) => at >= first);
      await waitFor(() => voicedAt() !== undefined || l.ended, 5_000);
      const voiced = voicedAt();
      if (voiced !== undefined) result.v2vVoiced.push(voiced - sentAt);
      result.answeredAt.push(performance.timeOrigin + first);
      const hangoverEnd = stub ? l.frameSentAt(lastSpeechFrame + STUB_ENDPOINT_MS / FRAME_MS) : undefined;
      if (hangoverEnd !== undefined && hangoverEnd <= first) result.fromHangoverEnd.push(first - hangoverEnd);
      await waitFor(() => l.playedAfter(before) || l.ended, 30_000);
      pacing(l.arrivals, before, l.arrivals.length, result, script.stalls);
    } while (performance.now() < end);
    result.sendLagMs = l.sendLag();
    l.hangUp();
    result.framesReceived = l.arrivals.length;
  } catch (error) {
    result.error = (error as Error).message;
    line?.hangUp();
  } finally {
    idle();
  }
  return result;
}

interface PathRun {
  results: CallResult[];
  emitted: number;
  elapsedS: number;
  stalls: number;
  /** Out of process (--stats-url): the service's own CPU (µs), memory and event-loop delay while the calls ran. */
  service: { cpuUs: number; rssMb: number; loopDelayMs: ServiceStats['loopDelayMs'] } | null;
  /** This process's event-loop delay while the calls ran (callers and phones; the service too in process). */
  callersLoopDelayMs: { p50: number; p99: number; max: number };
  /** This process's CPU (service, callers and phones together) while the calls ran, µs. */
  cpuUs: number;
  /** Out of process: the turns the service answered while the calls ran, with its measured parts. */
  serviceTurns: TurnParts[];
}

/** N concurrent calls of one path: ramped, held at a barrier after their greetings, then run together. */
async function runPath(target: Target, place: (script: SipScript) => Promise<CallResult>): Promise<PathRun> {
  let idle = 0;
  let release!: () => void;
  const barrier = new Promise<void>((r) => (release = r));
  const stalls = new LoopStalls();
  const running: Promise<CallResult>[] = [];
  const phrases = loadPhrases({ oneStubTurn: stub });
  for (let i = 0; i < args.calls; i++) {
    running.push(
      place({
        phrases,
        durationMs: args.duration * 1000,
        pauseMs: [400, 1200],
        barrier,
        onIdle: () => idle++,
        stalls,
        seed: i + 1,
      }),
    );
    await sleep(1000 / args.ramp);
  }
  const all = Promise.all(running);
  while (idle < args.calls) await Promise.race([sleep(20), all]);
  await sleep(500);
  // The embedded voice keeps no count of the frames it made: dropped frames are the stub's figure only.
  const framesEmitted = async () =>
    statsUrl ? (await serviceStats(statsUrl)).framesEmitted : (target.stub?.ttsEngine.framesEmitted ?? 0);
  if (statsUrl) await serviceStats(statsUrl, { reset: true });
  const svc0 = statsUrl ? await serviceStats(statsUrl) : null;
  const emittedBefore = await framesEmitted();
  const callersLoop = monitorEventLoopDelay({ resolution: 5 });
  const t0 = performance.now();
  const cpu0 = process.cpuUsage();
  callersLoop.enable();
  stalls.start();
  release();
  const results = await all;
  stalls.stop();
  callersLoop.disable();
  const cpu = process.cpuUsage(cpu0);
  // Packets still in flight after a hang-up land within a few ms.
  await sleep(200);
  const svc1 = statsUrl ? await serviceStats(statsUrl) : null;
  // The histogram holds whole 5 ms intervals: the delay is what exceeds them (as bench:serve-stub reports its own).
  const late = (ns: number) => Math.round(Math.max(0, ns / 1e6 - 5) * 100) / 100;
  return {
    results,
    service:
      svc0 && svc1
        ? {
            cpuUs: svc1.cpuUserUs + svc1.cpuSystemUs - svc0.cpuUserUs - svc0.cpuSystemUs,
            rssMb: Math.round(svc1.rss / 1e6),
            loopDelayMs: svc1.loopDelayMs,
          }
        : null,
    callersLoopDelayMs: {
      p50: late(callersLoop.percentile(50)),
      p99: late(callersLoop.percentile(99)),
      max: late(callersLoop.max),
    },
    emitted: (svc1 ? svc1.framesEmitted : await framesEmitted()) - emittedBefore,
    elapsedS: (performance.now() - t0) / 1000,
    stalls: stalls.count,
    cpuUs: cpu.user + cpu.system,
    serviceTurns: svc1?.turns ?? [],
  };
}

/**
 * The service's call_id of each SIP call by its SIP Call-ID (the record's metadata.sip_call_id): a phone knows
 * only its dialog, and the service's turn parts name the call_id.
 */
async function callIdsBySipCallId(target: Target): Promise<Map<string, string>> {
  const ids = new Map<string, string>();
  for (const c of await listCalls(target)) {
    const sip = c.metadata?.['sip_call_id'];
    if (typeof sip === 'string') ids.set(sip, c.call_id);
  }
  return ids;
}

const loadStart = loadavg();
const sipPorts = args.sip ? args.sip.split(',').map((a) => Number(a.split(':')[2])) : [await freeUdpPort()];
const target = await startTarget({
  engines: args.engines,
  url: args.url,
  key: args.key,
  env: {
    SIP_LISTEN: `udp:${HOST}:${sipPorts[0]}`,
    RTP_PORTS: `${SERVICE_RTP.low}-${SERVICE_RTP.high}`,
  },
});
const phones = await startPhones();
const created = await fetch(`${target.url}/v2/sip-trunks`, {
  method: 'POST',
  headers: { authorization: `Bearer ${target.key}`, 'content-type': 'application/json' },
  body: JSON.stringify({
    name: 'bench',
    numbers: [target.number],
    inbound: { allowed_addresses: [`${HOST}/32`] },
    outbound: { address: `${HOST}:${phones.wire.address().udp}`, transport: 'udp' },
  }),
});
if (created.status !== 201)
  throw new Error(`creating the SIP trunk answered ${created.status}: ${await created.text()}`);
console.error(
  `bench:calls --transport sip: ${args.calls} calls × ${args.duration} s per path, ${args.engines} engines, SIP on ${HOST}:${sipPorts.join(', ')}`,
);

// One call of each path first, so JIT, pools and lazily built state are not charged to the measured calls.
const warmScript = {
  phrases: loadPhrases({ oneStubTurn: stub }),
  durationMs: 0,
  pauseMs: [400, 400] as [number, number],
  barrier: Promise.resolve(),
  onIdle: () => undefined,
  stalls: new LoopStalls(),
  seed: 9999,
};
// In process: the service's own latency parts per turn, from its events (out of process: serve-stub's stats).
const localTurns: TurnParts[] = [];
target.service?.events.on('turn', ({ callId, parts }) => localTurns.push({ callId, ...parts }));
const warmTwilio = await runCall(target, warmScript);
if (warmTwilio.error) throw new Error(`Twilio warm-up call failed: ${warmTwilio.error}`);
const warmSip = await sipCall(target, phones, sipPorts, warmScript);
if (warmSip.error) throw new Error(`SIP warm-up call failed: ${warmSip.error}`);

const loadTwilio = loadavg();
const twilio = await runPath(target, (s) =>
  runCall(target, stub ? { ...s, hangoverFrames: STUB_ENDPOINT_MS / FRAME_MS } : s),
);
const loadSip = loadavg();
const sip = await runPath(target, (s) => sipCall(target, phones, sipPorts, s));
const loadEnd = loadavg();
if (stub) {
  const ids = await callIdsBySipCallId(target);
  for (const r of sip.results) r.callId = ids.get(r.callId) ?? r.callId;
}
await phones.wire.close();
await target.close();

const OWN_OVERHEAD =
  "runtime's own overhead per turn (v2v − hangover − the turn's STT final, model request → first speakable chunk and TTS first audio, as the service measured them)";
const summarize = (run: PathRun) => {
  const all = <K extends 'v2v' | 'v2vVoiced' | 'fromHangoverEnd' | 'jitter' | 'jitterCallersOnTime'>(k: K) =>
    run.results.flatMap((r) => r[k]);
  const received = run.results.reduce((n, r) => n + r.framesReceived, 0);
  const series: Record<string, SeriesStats | null> = {
    ...(stub
      ? {
          [`runtime overhead per turn (v2v − ${STUB_ENDPOINT_MS} ms stub hangover)`]: stats(
            all('v2v').map((v) => v - STUB_ENDPOINT_MS),
          ),
          "runtime overhead per turn, from the caller's frame that ends the hangover": stats(all('fromHangoverEnd')),
          [OWN_OVERHEAD]: stats(ownOverhead(run.results, statsUrl ? run.serviceTurns : localTurns, STUB_ENDPOINT_MS)),
        }
      : {
          "voice to voice per turn (the caller's last speech frame → the agent's first packet)": stats(all('v2v')),
          "voice to voice to the agent's first voiced packet": stats(all('v2vVoiced')),
        }),
    'send jitter |gap − 20 ms| at the receiving phone, every gap': stats(all('jitter')),
    "send jitter, gaps no callers' loop stall touched": stats(all('jitterCallersOnTime')),
    'caller audio behind real time at hang-up': stats(
      run.results.flatMap((r) => (r.sendLagMs === null ? [] : [r.sendLagMs])),
    ),
  };
  return {
    series,
    turns: all('v2v').length,
    turnsMissed: run.results.reduce((n, r) => n + r.turnsMissed, 0),
    lateFrames: run.results.reduce((n, r) => n + r.late, 0),
    framesReceived: received,
    framesEmittedByStubTts: run.emitted,
    droppedFrames: stub ? Math.max(0, run.emitted - received) : null,
    callersLoopStalls: run.stalls,
    errors: run.results.filter((r) => r.error).map((r) => r.error),
    elapsedS: Math.round(run.elapsedS * 10) / 10,
    cpuMsPerCallPerSecond: Math.round((run.cpuUs / 1000 / args.calls / run.elapsedS) * 100) / 100,
    serviceCpuMsPerCallPerSecond: run.service
      ? Math.round((run.service.cpuUs / 1000 / args.calls / run.elapsedS) * 100) / 100
      : null,
    serviceRssMb: run.service?.rssMb ?? null,
    serviceLoopDelayMs: run.service?.loopDelayMs ?? null,
    callersLoopDelayMs: run.callersLoopDelayMs,
  };
};
const paths = { twilio: summarize(twilio), sip: summarize(sip) };
const summary = {
  when: new Date().toISOString(),
  args,
  note: args.url
    ? `shared 2-core machine; service in another process (${args.url}); Twilio calls first, then SIP calls`
    : 'shared 2-core machine; the phones and callers run in the same process as the service; Twilio calls first, then SIP calls',
  loadAverage: { start: loadStart, twilio: loadTwilio, sip: loadSip, end: loadEnd },
  paths,
};
const rows = Object.keys(paths.twilio.series).flatMap((metric) =>
  (['twilio', 'sip'] as const).flatMap((path) => {
    const s = paths[path].series[metric];
    return s ? [{ metric: `${metric} (ms)`, path, p50: s.p50, p90: s.p90, p99: s.p99, max: s.max, n: s.num }] : [];
  }),
);
const load = (l: number[]) => l.map((x) => x.toFixed(2)).join(' ');
const md = [
  `# bench:calls --transport sip — ${args.calls} calls × ${args.duration} s per path, ${args.engines} engines`,
  '',
  markdownTable(rows),
  '',
  markdownTable(
    (['twilio', 'sip'] as const).map((path) => ({
      path,
      turns: paths[path].turns,
      'turns missed': paths[path].turnsMissed,
      'late frames': paths[path].lateFrames,
      'dropped frames': paths[path].droppedFrames ?? '',
      'frames received': paths[path].framesReceived,
      "callers' loop stalls": paths[path].callersLoopStalls,
      [args.url ? 'CPU ms per call per s (callers)' : 'CPU ms per call per s (service + callers)']:
        paths[path].cpuMsPerCallPerSecond,
      ...(args.url
        ? {
            'service CPU ms per call per s': paths[path].serviceCpuMsPerCallPerSecond ?? '',
            'service RSS MB': paths[path].serviceRssMb ?? '',
            'service loop delay p99/max ms': paths[path].serviceLoopDelayMs
              ? `${paths[path].serviceLoopDelayMs!.p99.toFixed(1)} / ${paths[path].serviceLoopDelayMs!.max.toFixed(1)}`
              : '',
          }
        : {}),
      "callers' loop delay p99/max ms": `${paths[path].callersLoopDelayMs.p99} / ${paths[path].callersLoopDelayMs.max}`,
      errors: paths[path].errors.length,
    })),
  ),
  '',
  `${summary.note}; load average ${load(loadStart)} at the start, ${load(loadTwilio)} before the Twilio calls, ${load(loadSip)} before the SIP calls, ${load(loadEnd)} at the end`,
].join('\n');
const base = writeArtifacts(`calls-sip-${args.engines}-${args.calls}x${args.duration}s`, summary, md);
console.log(md);
for (const path of ['twilio', 'sip'] as const)
  for (const e of new Set(paths[path].errors)) console.error(`${path} error: ${e}`);
console.error(`written: ${base}.{json,md}`);
process.exit(0);
