// What the call makes of AssemblyAI's ended turn, which comes twice with format_turns on: end_of_turn with the turn
// model's verdict (turn_is_formatted false), then the same turn again formatted (turn_is_formatted true): one turn,
// one final text (the formatted one when it comes in time, the words never twice), one end-of-turn verdict the
// formatted copy does not withdraw. The real AssemblyAI stream (src/speech/stt/assemblyai/engine.ts) over a socket
// this test speaks for, on the call's injected time, under the caller's end-of-turn policy.
import { EventEmitter } from 'node:events';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { CallClock } from '../../../src/call/call-clock.ts';
import { CallerInput, type CallerTurn } from '../../../src/call/caller/caller-input.ts';
import { SemanticEndOfTurn } from '../../../src/call/caller/end-of-turn.ts';
import type { WebSocket } from '../../../src/net/websocket.ts';
import { AssemblyAiSttEngine } from '../../../src/speech/stt/assemblyai/engine.ts';
import { AssemblyAiMessageSchema } from '../../../src/speech/stt/assemblyai/protocol.ts';
import type { SttResult } from '../../../src/speech/types.ts';
import { ManualTimers } from '../../../src/timers.ts';
import { EnergyVad, SPEECH, frame, quietCallerEvents, settle } from '../../helpers/session-fakes.ts';

const T0 = 1_700_000_000_000;

/** The provider's side of the socket, spoken by the test. */
class ProviderSocket extends EventEmitter {
  readonly OPEN = 1;
  readyState = 1;
  readonly controls: string[] = [];
  send(data: string | Buffer): void {
    if (typeof data === 'string') this.controls.push((JSON.parse(data) as { type: string }).type);
  }
  close(): void {
    this.readyState = 3;
  }
  terminate(): void {
    this.readyState = 3;
  }
  says(message: unknown): void {
    this.emit('message', Buffer.from(JSON.stringify(message)), false);
  }
}

type Word = [text: string, startMs: number, endMs: number];

/** A Turn message as AssemblyAI's message sequence gives it. */
function turn(order: number, words: Word[], flags: { end: boolean; formatted: boolean }, confidence: number) {
  const text = words.map(([w]) => w).join(' ');
  return {
    turn_order: order,
    turn_is_formatted: flags.formatted,
    end_of_turn: flags.end,
    transcript: text,
    end_of_turn_confidence: confidence,
    words: words.map(([w, start, end]) => ({ start, end, text: w, confidence: 0.9, word_is_final: true })),
    utterance: flags.end && !flags.formatted ? text : '',
    type: 'Turn',
  };
}

// "my zip code is nine four one oh seven", said from 0.4 s to 1.56 s of the stream's audio; formatted, the digits
// come as one word (inverse text normalization) spanning theirs, and the words alone do not tell the turn is over.
const SAID: Word[] = [
  ['my', 400, 560],
  ['zip', 560, 720],
  ['code', 720, 880],
  ['is', 880, 960],
  ['nine', 960, 1100],
  ['four', 1100, 1200],
  ['one', 1200, 1300],
  ['oh', 1300, 1400],
  ['seven', 1400, 1560],
];
const FORMATTED: Word[] = [
  ['My', 400, 560],
  ['zip', 560, 720],
  ['code', 720, 880],
  ['is', 880, 960],
  ['94107', 960, 1560],
];
const YES: Word[] = [['yes', 2900, 3100]];
const YES_FORMATTED: Word[] = [['Yes.', 2900, 3100]];

async function setup() {
  const timers = new ManualTimers(T0);
  const clock = new CallClock(timers);
  clock.connect();
  const socket = new ProviderSocket();
  const engine = new AssemblyAiSttEngine({
    apiKey: 'aai-key',
    timers,
    openWebSocket: async () => socket as unknown as WebSocket,
  });
  /** What the stream told the call: its end-of-turn verdicts and its final texts. */
  const verdicts: (number | null)[] = [];
  const finals: SttResult[] = [];
  const turns: (CallerTurn & { at: number })[] = [];
  const decided: boolean[] = [];
  const log = pino(
    { level: 'debug' },
    {
      write: (line: string) => {
        const entry = JSON.parse(line) as { msg: string; recogniser_decided?: boolean };
        if (entry.msg === 'end of turn') decided.push(entry.recogniser_decided === true);
      },
    },
  );
  const caller = new CallerInput({
    rate: 16000,
    sttRate: 16000,
    clock,
    timers,
    engines: {
      openVad: async () => new EnergyVad(16000),
      openStt: (events) =>
        engine.open({
          sampleRate: 16000,
          language: 'en-US',
          events: {
            ...events,
            endOfTurn: (signal) => {
              verdicts.push(signal.confidence);
              events.endOfTurn?.(signal);
            },
            final: (result) => finals.push(result),
          },
        }),
    },
    endOfTurn: new SemanticEndOfTurn({ minMs: 240, maxMs: 2000, unsureMs: 500 }),
    interruptionThresholdMs: 600,
    agentBusy: () => false,
    isAcknowledgement: () => false,
    events: quietCallerEvents({ userTurn: (t) => turns.push({ ...t, at: clock.sinceStart() }) }),
    log,
  });
  await caller.open();
  const feed = async (ms: number, amplitude: number) => {
    for (let t = 0; t < ms; t += 20) {
      timers.advance(20);
      await settle();
      caller.audio(frame(amplitude, 16000));
      await settle();
    }
  };
  return { socket, caller, feed, verdicts, finals, turns, decided };
}

describe("AssemblyAI's ended turn and its formatted copy", () => {
  it('the pair in order, before the VAD hears the pause: one verdict that the formatted copy does not withdraw (the turn ends min_ms after the pause), one final, the formatted text', async () => {
    const s = await setup();
    await s.feed(400, 0);
    await s.feed(1160, SPEECH);
    s.socket.says(turn(0, SAID.slice(0, 6), { end: false, formatted: false }, 0.02));
    await s.feed(100, 0);
    s.socket.says(turn(0, SAID, { end: true, formatted: false }, 0.9));
    s.socket.says(turn(0, FORMATTED, { end: true, formatted: true }, 0.9));
    await s.feed(500, 0);
    // The VAD's pause at 1.56 s; the verdict stands, and a whole zip code ends the turn after min_ms (240) by itself.
    expect(s.turns.map((t) => [t.text, Math.round(t.at)])).toEqual([['My zip code is 94107', 1800]]);
    expect(s.verdicts).toEqual([0.9]);
    expect(s.finals.map((f) => f.text)).toEqual(['My zip code is 94107']);
    expect(s.decided).toEqual([false]);
    // AssemblyAI ended the turn itself: nothing was left to ask it to settle.
    expect(s.socket.controls).toEqual([]);
  });

  it('only the unformatted one: the verdict holds and its words are the final text, once', async () => {
    const s = await setup();
    await s.feed(400, 0);
    await s.feed(1160, SPEECH);
    await s.feed(100, 0);
    s.socket.says(turn(0, SAID, { end: true, formatted: false }, 0.9));
    await s.feed(3000, 0);
    expect(s.verdicts).toEqual([0.9]);
    // The words are a whole zip code: they end the turn as soon as the verdict would.
    expect(s.decided).toEqual([false]);
    expect(s.finals.map((f) => f.text)).toEqual(['my zip code is nine four one oh seven']);
    expect(s.turns.map((t) => t.text)).toEqual(['my zip code is nine four one oh seven']);
  });

  it('the formatted copy coming after the final was taken without it is dropped: the next turn does not carry its words', async () => {
    const s = await setup();
    await s.feed(400, 0);
    await s.feed(1160, SPEECH);
    s.socket.says(turn(0, SAID.slice(0, 3), { end: false, formatted: false }, 0.02));
    // The call ends the turn first (ForceEndpoint); AssemblyAI answers the unformatted turn, its copy is slow.
    await s.feed(800, 0);
    expect(s.socket.controls).toEqual(['ForceEndpoint']);
    s.socket.says(turn(0, SAID, { end: true, formatted: false }, 1));
    await s.feed(2100, 0);
    expect(s.turns.map((t) => t.text)).toEqual(['my zip code is nine four one oh seven']);
    s.socket.says(turn(0, FORMATTED, { end: true, formatted: true }, 1));
    // The next turn: "yes", its pair in time.
    await s.feed(240, 0);
    await s.feed(200, SPEECH);
    s.socket.says(turn(1, YES, { end: false, formatted: false }, 0.02));
    await s.feed(800, 0);
    s.socket.says(turn(1, YES, { end: true, formatted: false }, 1));
    s.socket.says(turn(1, YES_FORMATTED, { end: true, formatted: true }, 1));
    await s.feed(100, 0);
    expect(s.turns.map((t) => t.text)).toEqual(['my zip code is nine four one oh seven', 'Yes.']);
    expect(s.finals.map((f) => f.text)).toEqual(['my zip code is nine four one oh seven', 'Yes.']);
  });
});

describe("AssemblyAI's formatted Turn as its API reference shows it", () => {
  it('parses without word_is_final on its words', () => {
    const parsed = AssemblyAiMessageSchema.safeParse({
      type: 'Turn',
      turn_order: 0,
      turn_is_formatted: true,
      end_of_turn: true,
      transcript: 'Hello world.',
      end_of_turn_confidence: 0.98,
      words: [
        { text: 'Hello', start: 0, end: 500, confidence: 0.99 },
        { text: 'world.', start: 500, end: 1000, confidence: 0.98 },
      ],
    });
    expect(parsed.success).toBe(true);
  });
});
