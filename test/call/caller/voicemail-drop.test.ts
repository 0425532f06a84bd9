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
function setup(handling: VoicemailHandling | null) {
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
    log: silentLog,
  });
  const speech = (on: boolean, atMs: number) => {
    speaking = on;
    if (on) drop.speechStarted(atMs);
    else drop.speechEnded(atMs);
  };
  return { timers, intents, host, drop, speech };
}

describe('VoicemailDrop', () => {
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
