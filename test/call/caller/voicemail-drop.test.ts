import pino from 'pino';
import { describe, expect, it } from 'vitest';
import type { VoicemailHandling } from '../../../src/agents/schema.ts';
import { VOICEMAIL_DROP_DEFAULTS, VoicemailDrop } from '../../../src/call/caller/voicemail-drop.ts';
import type { FlowIntent } from '../../../src/call/flow.ts';
import { ManualTimers } from '../../../src/timers.ts';
import { silentLog } from '../../helpers/session-fakes.ts';

const LEAVE: VoicemailHandling = {
  action: 'leave_message',
  message: 'Hi, this is the clinic. Please call us back.',
  detectTimeoutMs: 30_000,
};
const GREETING = 'Hi, you have reached Sam. Please leave a message after the tone.';

/**
 * A drop on a fake session that records the intents it is given; `speaking`: the far side's speech as the VAD hears it.
 */
function setup(handling: VoicemailHandling | null, greeting?: string, log = silentLog) {
  const timers = new ManualTimers(0);
  const intents: FlowIntent[] = [];
  const host = { live: true, act: (intent: FlowIntent) => intents.push(intent) };
  let speaking = false;
  const drop = new VoicemailDrop({
    rate: 8000,
    handling,
    timers,
    host,
    callerSpeaking: () => speaking,
    greeting,
    log,
  });
  const speech = (on: boolean, atMs: number) => {
    speaking = on;
    if (on) drop.speechStarted(atMs);
    else drop.speechEnded(atMs);
  };
  return { timers, intents, host, drop, speech };
}

/** 20 ms frames of silence from `fromMs` to `toMs`, as the line delivers them, each judged by the VAD as it comes. */
function quiet(drop: VoicemailDrop, fromMs: number, toMs: number) {
  for (let at = fromMs; at < toMs; at += 20) {
    drop.audio(new Int16Array(160), at);
    drop.judged(at + 20);
  }
}

describe('VoicemailDrop', () => {
  describe("the agent's greeting on a call that looks for a machine", () => {
    it("is held at the start, and said as the callee's first words pause, answering them, while the detector goes on listening", () => {
      const s = setup(LEAVE, 'Hello, this is the clinic.');
      expect(s.drop.holdsGreeting).toBe(true);
      quiet(s.drop, 0, 300);
      s.speech(true, 300);
      quiet(s.drop, 300, 1_000);
      expect(s.intents).toEqual([]);
      s.speech(false, 1_000);
      expect(s.intents).toEqual([{ kind: 'greet', text: 'Hello, this is the clinic.', answering: true }]);
      expect(s.drop.holdsGreeting).toBe(false);
      // Said once; the detector still decides (a person: 1.5 s of quiet after a short stretch), and nothing more comes.
      s.speech(true, 1_200);
      s.speech(false, 1_500);
      quiet(s.drop, 1_500, 3_100);
      expect(s.intents).toHaveLength(1);
    });

    it('logs why it was said then and when, on the audio clock the VAD and the detector use', () => {
      const lines: Record<string, unknown>[] = [];
      const log = pino(
        { level: 'info' },
        { write: (line: string) => lines.push(JSON.parse(line) as Record<string, unknown>) },
      );
      const paused = setup(LEAVE, 'Hello.', log);
      quiet(paused.drop, 0, 300);
      paused.speech(true, 300);
      quiet(paused.drop, 300, 1_000);
      paused.speech(false, 800);
      const quietLines: Record<string, unknown>[] = [];
      const quietLog = pino(
        { level: 'info' },
        { write: (line: string) => quietLines.push(JSON.parse(line) as Record<string, unknown>) },
      );
      const silent = setup(LEAVE, 'Hello.', quietLog);
      quiet(silent.drop, 0, VOICEMAIL_DROP_DEFAULTS.quietAnswerMs + 20);
      const said = (l: Record<string, unknown>[]) => l.find((line) => line.msg === 'greeting the callee');
      expect(said(lines)).toMatchObject({ after: 'pause', at_ms: 1_000, callee_from_ms: 300, callee_to_ms: 800 });
      expect(said(quietLines)).toMatchObject({
        after: 'quiet',
        at_ms: VOICEMAIL_DROP_DEFAULTS.quietAnswerMs,
        callee_from_ms: null,
        callee_to_ms: null,
      });
    });

    it('is said to a callee who stays quiet once quietAnswerMs have passed, answering nothing', () => {
      const s = setup(LEAVE, 'Hello.');
      // Judged quiet to 20 ms short of it: not yet; the frame that reaches it: now.
      quiet(s.drop, 0, VOICEMAIL_DROP_DEFAULTS.quietAnswerMs - 20);
      expect(s.intents).toEqual([]);
      quiet(s.drop, VOICEMAIL_DROP_DEFAULTS.quietAnswerMs - 20, VOICEMAIL_DROP_DEFAULTS.quietAnswerMs);
      expect(s.intents).toEqual([{ kind: 'greet', text: 'Hello.', answering: false }]);
    });

    it("waits for the VAD's judgement, not the line: audio it has not judged yet (it may be speech) is no quiet answer", () => {
      const s = setup(LEAVE, 'Hello.');
      for (let at = 0; at < 3_000; at += 20) s.drop.audio(new Int16Array(160), at);
      s.drop.judged(1_000);
      expect(s.intents).toEqual([]);
      // The VAD, catching up, heard the callee begin at 1.2 s: their words, not the clock, decide.
      s.drop.judged(1_200);
      s.speech(true, 1_200);
      s.drop.judged(3_000);
      expect(s.intents).toEqual([]);
    });

    it('is never said to a machine known before the pause; one known after it cuts the agent as one known earlier does', () => {
      const early = setup(LEAVE, 'Hello.');
      early.speech(true, 300);
      early.drop.words(GREETING, 1_500);
      early.speech(false, 4_000);
      quiet(early.drop, 4_000, 9_000);
      early.timers.advance(VOICEMAIL_DROP_DEFAULTS.greetingEndMs);
      expect(early.intents.map((i) => i.kind)).toEqual(['take_turn', 'end']);

      const late = setup(LEAVE, 'Hello.');
      late.speech(true, 300);
      late.speech(false, 1_200);
      late.speech(true, 1_500);
      late.drop.words(GREETING, 2_500);
      expect(late.intents).toEqual([
        { kind: 'greet', text: 'Hello.', answering: true },
        { kind: 'take_turn', cut: true },
      ]);
    });

    it('is not held without detection, nor without a begin message', () => {
      expect(setup(null, 'Hello.').drop.holdsGreeting).toBe(false);
      expect(setup(LEAVE, '').drop.holdsGreeting).toBe(false);
    });
  });

  it("a machine known by its greeting's words takes the turn from the agent at once, and the message is left once the greeting has been quiet greetingEndMs", () => {
    const s = setup(LEAVE);
    s.speech(true, 0);
    expect(s.drop.holdsLine).toBe(false);
    s.drop.words(GREETING, 2_000);
    expect(s.intents).toEqual([{ kind: 'take_turn', cut: true }]);
    expect(s.drop.holdsLine).toBe(true);
    // Still greeting: nothing is said over it.
    s.timers.advance(5_000);
    expect(s.intents).toHaveLength(1);
    s.speech(false, 5_000);
    s.timers.advance(VOICEMAIL_DROP_DEFAULTS.greetingEndMs - 1);
    s.speech(true, 6_499);
    s.speech(false, 6_800);
    s.timers.advance(VOICEMAIL_DROP_DEFAULTS.greetingEndMs - 1);
    expect(s.intents).toHaveLength(1);
    s.timers.advance(1);
    expect(s.intents[1]).toEqual({
      kind: 'end',
      reason: 'voicemail_reached',
      say: LEAVE.message,
      message: 'An answering machine answered (found by its greeting words); the voicemail message was left.',
    });
  });

  it('a greeting that never pauses gets the message at beepWaitMs', () => {
    const s = setup(LEAVE);
    s.speech(true, 0);
    s.drop.words(GREETING, 1_000);
    s.timers.advance(VOICEMAIL_DROP_DEFAULTS.beepWaitMs);
    expect(s.intents.at(-1)).toMatchObject({ kind: 'end', reason: 'voicemail_reached', say: LEAVE.message });
  });

  it('without a message, a machine ends the call voicemail_reached at once, leaving nothing', () => {
    const s = setup({ action: 'hangup', message: null, detectTimeoutMs: 30_000 });
    s.drop.words(GREETING, 1_000);
    expect(s.intents).toEqual([
      {
        kind: 'end',
        reason: 'voicemail_reached',
        message: 'An answering machine answered (found by its greeting words); no message was left.',
      },
    ]);
    expect(s.drop.holdsLine).toBe(false);
  });

  it("the carrier's own detection ends a call that does not look for machines: voicemail_reached, no message", () => {
    const s = setup(null);
    s.drop.words(GREETING, 1_000);
    expect(s.intents).toEqual([]);
    s.drop.carrierFound(1_500);
    expect(s.intents).toEqual([
      {
        kind: 'end',
        reason: 'voicemail_reached',
        message: "An answering machine answered (found by its carrier's detection); no message was left.",
      },
    ]);
  });

  it('once stopped (the call ended) its timers are gone and it asks for nothing more', () => {
    const s = setup(LEAVE);
    s.drop.words(GREETING, 1_000);
    s.drop.stop();
    s.timers.advance(VOICEMAIL_DROP_DEFAULTS.beepWaitMs * 2);
    expect(s.intents).toEqual([{ kind: 'take_turn', cut: true }]);
    expect(s.timers.pendingCount).toBe(0);
  });
});
