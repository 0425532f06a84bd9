// Fakes of one stage each, for unit tests of CallSession under ManualTimers: a transport
// that "plays" audio in fake real time and echoes marks, an energy VAD, a scripted
// recogniser, a TTS whose audio length follows the word count, and a scripted model.
import pino from 'pino';
import type { ReplyHooks, ReplyOutcome } from '../../src/call/model/reply.ts';
import type { ChatMessage } from '../../src/llm/types.ts';
import type { ManualTimers } from '../../src/timers.ts';
import type { AgentBrain } from '../../src/call/model/model-turn.ts';
import type { SessionEngines } from '../../src/call/session.ts';
import type {
  PcmChunk,
  SttResult,
  SttStream,
  TtsEngine,
  TtsSynthesisOptions,
  VadEvent,
  VadStream,
} from '../../src/speech/types.ts';
import type { CallerEvents } from '../../src/call/caller/caller-input.ts';
import type { CallTransport, SessionNotice, TransportHandlers } from '../../src/call/transport.ts';
import type { DisconnectionReason } from '../../src/records/record.ts';

export const silentLog = pino({ level: 'silent' });

/** Caller-input events that do nothing, but those a test listens to. */
export function quietCallerEvents(listen: Partial<CallerEvents> = {}): CallerEvents {
  const none = (): void => undefined;
  return {
    speechStarted: none,
    speechEnded: none,
    heard: none,
    judged: none,
    interruption: none,
    partial: none,
    recognised: none,
    userTurn: none,
    noTurn: none,
    failed: none,
    unheard: none,
    ...listen,
  };
}

export const SPEECH = 8000;
export const frame = (amplitude: number, rate = 16000) => new Int16Array(rate / 50).fill(amplitude);

export class FakeTransport implements CallTransport {
  readonly kind = 'twilio' as const;
  handlers!: TransportHandlers;
  framesSent = 0;
  clears = 0;
  readonly marks: string[] = [];
  readonly notices: SessionNotice[] = [];
  closedWith: DisconnectionReason | null = null;
  /** Lengths of the frames sent, to check they are 20 ms at the transport's rate. */
  readonly frameLengths = new Set<number>();
  private playEnd = 0;
  private pendingMarks: { name: string; handle: { id: number } }[] = [];

  constructor(
    private readonly timers: ManualTimers,
    readonly sampleRate: 8000 | 16000 = 16000,
  ) {}

  attach(handlers: TransportHandlers): void {
    this.handlers = handlers;
  }
  sendAudio(frame: Int16Array): void {
    this.framesSent++;
    this.frameLengths.add(frame.length);
    this.playEnd = Math.max(this.playEnd, this.timers.now()) + 20;
  }
  sendMark(name: string): void {
    this.marks.push(name);
    const entry = { name, handle: { id: -1 } };
    entry.handle = this.timers.setTimeout(
      () => {
        this.pendingMarks = this.pendingMarks.filter((m) => m !== entry);
        this.handlers.mark(name);
      },
      Math.max(0, this.playEnd - this.timers.now()),
    );
    this.pendingMarks.push(entry);
  }
  clear(): void {
    this.clears++;
    this.playEnd = this.timers.now();
    for (const m of this.pendingMarks.splice(0)) {
      this.timers.clearTimeout(m.handle);
      this.handlers.mark(m.name);
    }
  }
  notify(notice: SessionNotice): void {
    this.notices.push(notice);
  }
  close(reason: DisconnectionReason): void {
    this.closedWith ??= reason;
  }
}

/** Speech is any frame louder than SPEECH/2; start at once, end after 200 ms of quiet. */
export class EnergyVad implements VadStream {
  lastProbability = 0;
  speaking = false;
  private samples = 0;
  private quietSince: number | null = null;
  constructor(private readonly rate = 16000) {}
  async push(samples: Int16Array): Promise<VadEvent[]> {
    const t = this.samples / this.rate;
    this.samples += samples.length;
    const loud = Math.abs(samples[0] ?? 0) > SPEECH / 2;
    this.lastProbability = loud ? 1 : 0;
    if (loud) {
      this.quietSince = null;
      if (!this.speaking) {
        this.speaking = true;
        return [{ type: 'speech_start', at: t }];
      }
      return [];
    }
    if (this.speaking) {
      this.quietSince ??= t;
      if (this.samples / this.rate - this.quietSince >= 0.2 - 1e-9) {
        this.speaking = false;
        const at = this.quietSince;
        this.quietSince = null;
        return [{ type: 'speech_end', at }];
      }
    }
    return [];
  }
  reset(): void {}
  close(): void {}
}

/** An EnergyVad whose push number `failAt` throws, as a crashed inference would. */
export class FailingVad extends EnergyVad {
  pushes = 0;
  constructor(
    private readonly failAt: number,
    rate = 16000,
  ) {
    super(rate);
  }
  override async push(samples: Int16Array): Promise<VadEvent[]> {
    if (++this.pushes === this.failAt) throw new Error('inference failed');
    return super.push(samples);
  }
}

export class ScriptedStt implements SttStream {
  readonly heard: string[] = [];
  pushed = 0;
  cancels = 0;
  failNext = false;
  constructor(private readonly script: string[]) {}
  push(samples: Int16Array): void {
    this.pushed += samples.length;
  }
  /** Samples pushed by the time of each finalize. */
  readonly pushedAtFinalize: number[] = [];
  async finalize(): Promise<SttResult> {
    this.pushedAtFinalize.push(this.pushed);
    if (this.failNext) throw new Error('decoder crashed');
    const text = this.script.shift() ?? '';
    this.heard.push(text);
    return { text };
  }
  cancel(): void {
    this.cancels++;
  }
  async close(): Promise<void> {}
}

/**
 * A ScriptedStt that reads on request, as Moonshine does: `onReadNow` answers as a recogniser would (with a partial).
 */
export class ReadingStt extends ScriptedStt {
  /** Times the call asked it to read now. */
  readsNow = 0;
  onReadNow: (() => void) | null = null;
  readNow(): void {
    this.readsNow++;
    this.onReadNow?.();
  }
}

/** 100 ms of audio per word, in 20 ms chunks, at once. */
export class WordTts implements TtsEngine {
  readonly name = 'word-tts';
  readonly spoken: string[] = [];
  readonly rates = new Set<number>();
  async *synthesize(text: string, options: TtsSynthesisOptions): AsyncIterable<PcmChunk> {
    this.spoken.push(text);
    this.rates.add(options.sampleRate);
    const words = text.split(/\s+/).filter(Boolean).length;
    for (let i = 0; i < words * 5; i++) {
      if (options.signal?.aborted) return;
      yield { samples: new Int16Array(options.sampleRate / 50).fill(1000), sampleRate: options.sampleRate };
    }
  }
  async close(): Promise<void> {}
}

export type BrainStep = (
  messages: readonly ChatMessage[],
  hooks: ReplyHooks,
  signal: AbortSignal,
) => Promise<ReplyOutcome>;

export class ScriptedBrain implements AgentBrain {
  readonly calls: ChatMessage[][] = [];
  constructor(
    private readonly steps: BrainStep[],
    private readonly fallback?: BrainStep,
  ) {}
  respond(messages: readonly ChatMessage[], hooks: ReplyHooks, signal: AbortSignal): Promise<ReplyOutcome> {
    this.calls.push([...messages]);
    const step = this.steps.shift() ?? this.fallback;
    if (!step) return Promise.resolve({ kind: 'reply', messages: [] });
    return step(messages, hooks, signal);
  }
}

export const say =
  (text: string): BrainStep =>
  async (_m, hooks) => {
    hooks.onChunk?.(text);
    return { kind: 'reply', messages: [{ role: 'assistant', content: text }] };
  };

export function engines(
  stt: SttStream,
  tts: TtsEngine = new WordTts(),
  vad: VadStream = new EnergyVad(),
): SessionEngines {
  return { openVad: async () => vad, openStt: async () => stt, tts };
}

/** Lets promise callbacks (VAD, STT, TTS, model) run between timer steps. */
export async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}
