import pino, { type Logger } from 'pino';
import { describe, expect, it, vi } from 'vitest';
import { CallClock } from '../../../src/call/call-clock.ts';
import { isBackchannel } from '../../../src/call/caller/backchannel.ts';
import { CALLER_DEFAULTS, CallerInput, type CallerTurn } from '../../../src/call/caller/caller-input.ts';
import { SemanticEndOfTurn, SilenceEndOfTurn, type EndOfTurnPolicy } from '../../../src/call/caller/end-of-turn.ts';
import type { SttStreamEvents } from '../../../src/speech/types.ts';
import { ManualTimers } from '../../../src/timers.ts';
import {
  EnergyVad,
  FailingVad,
  ReadingStt,
  SPEECH,
  frame,
  quietCallerEvents,
  settle,
  silentLog,
} from '../../helpers/session-fakes.ts';

const T0 = 1_700_000_000_000;

function setup(
  options: {
    heard?: string[];
    heardAfterReopen?: string[];
    rate?: 8000 | 16000;
    sttRate?: 8000 | 16000;
    policy?: EndOfTurnPolicy;
    vad?: EnergyVad;
    vadOpens?: Promise<void>;
    /** Resolves when the first recogniser may open (its model loading, as on a process's first call). */
    sttOpens?: Promise<void>;
    noiseSuppression?: 'rnnoise';
    /** The first recogniser, when not one that reads `heard`. */
    first?: ReadingStt;
    /** Recognisers left to move to after the first, and the deadline of one with another after it. */
    fallback?: { left: number; deadlineMs: number };
    /** The first try at opening a recogniser is refused. */
    refuseFirstOpen?: boolean;
    log?: Logger;
    /** The agent's last words, as the session gives them. */
    asked?: string;
    outbound?: boolean;
    /** The model's own turn detection: whether it would report the caller's speech now. */
    modelReportsSpeech?: () => boolean;
  } = {},
) {
  const rate = options.rate ?? 16000;
  const timers = new ManualTimers(T0);
  const clock = new CallClock(timers);
  clock.connect();
  const stt = options.first ?? new ReadingStt(options.heard ?? []);
  /** Each move to the next recogniser, with its reason. */
  const moves: string[] = [];
  const fallback = options.fallback ? { ...options.fallback } : null;
  let refused = false;
  /** Every recogniser the caller opened, in order: a failed one is replaced. */
  const stts: ReadingStt[] = [];
  const vad = options.vad ?? new EnergyVad(rate);
  const log: string[] = [];
  const turns: (CallerTurn & { at: number })[] = [];
  const recorded: number[] = [];
  const recordedAudio: Int16Array[] = [];
  /** Speech starts as reported; each frame as heard (start, audio); each judged time, with the starts before it. */
  const starts: number[] = [];
  const heard: { at: number; frame: Int16Array }[] = [];
  const judged: { at: number; startsBefore: number }[] = [];
  const state = { agentBusy: false };
  const sttEvents: { current: SttStreamEvents | null } = { current: null };
  const caller = new CallerInput({
    rate,
    sttRate: options.sttRate ?? rate,
    clock,
    timers,
    engines: {
      openVad: async () => (await options.vadOpens, vad),
      openStt: async (events) => {
        if (stts.length === 0) await options.sttOpens;
        if (options.refuseFirstOpen && !refused) {
          refused = true;
          throw new Error('connection refused');
        }
        sttEvents.current = events;
        const opened = stts.length === 0 ? stt : new ReadingStt(options.heardAfterReopen ?? []);
        stts.push(opened);
        return opened;
      },
      ...(fallback
        ? {
            sttFailed: (reason) => {
              if (fallback.left === 0) return false;
              fallback.left--;
              moves.push(reason);
              return true;
            },
            sttFinalDeadlineMs: () => (fallback.left > 0 ? fallback.deadlineMs : null),
          }
        : {}),
    },
    endOfTurn: options.policy ?? new SilenceEndOfTurn(500),
    interruptionThresholdMs: 600,
    ...(options.modelReportsSpeech ? { modelReportsSpeech: options.modelReportsSpeech } : {}),
    agentBusy: () => state.agentBusy,
    isAcknowledgement: (text) => isBackchannel(text),
    lastAgentWords: () => options.asked ?? null,
    outbound: options.outbound,
    recording: {
      callerAudio: (frame, offsetMs) => {
        recorded.push(offsetMs);
        recordedAudio.push(frame.slice());
      },
    },
    noiseSuppression: options.noiseSuppression,
    events: {
      speechStarted: (at) => {
        starts.push(at);
        log.push('speechStarted');
      },
      speechEnded: () => undefined,
      heard: (frame, at) => heard.push({ at, frame: frame.slice() }),
      judged: (at) => judged.push({ at, startsBefore: starts.length }),
      interruption: () => log.push('interruption'),
      partial: (text) => log.push(`partial:${text}`),
      recognised: () => log.push('recognised'),
      userTurn: (turn) => {
        log.push('userTurn');
        turns.push({ ...turn, at: clock.sinceStart() });
      },
      noTurn: () => log.push('noTurn'),
      failed: (message) => log.push(`failed:${message}`),
      unheard: () => log.push('unheard'),
    },
    log: options.log ?? silentLog,
  });
  /** `ms` of caller audio, a frame once its 20 ms have been captured. */
  const feed = async (ms: number, amplitude: number) => {
    for (let t = 0; t < ms; t += 20) {
      timers.advance(20);
      await settle();
      caller.audio(frame(amplitude, rate));
      await settle();
    }
  };
  /** The recogniser reads what it has so far (Moonshine does at each pause). */
  const partial = (text: string) => sttEvents.current?.partial?.({ text });
  return {
    timers,
    clock,
    stt,
    stts,
    sttEvents,
    vad,
    caller,
    log,
    turns,
    recorded,
    recordedAudio,
    starts,
    heard,
    judged,
    state,
    feed,
    partial,
    moves,
  };
}

/** Speech (400 ms), then a pause the recogniser reads as `words`, `pauseMs` of it in all. */
const speaker = (s: ReturnType<typeof setup>) => async (words: string, pauseMs: number) => {
  await s.feed(400, SPEECH);
  await s.feed(200, 0);
  s.partial(words);
  await s.feed(pauseMs - 200, 0);
};

/** A recogniser that never gives a turn's final text. */
class SilentStt extends ReadingStt {
  override finalize(): Promise<{ text: string }> {
    return new Promise(() => undefined);
  }
}

/** A recogniser that reads as the audio comes (a streaming provider): it owes a result within 3 s of speech. */
class StreamingStt extends ReadingStt {
  readonly firstResultWithinMs = 3_000;
}

/**
 * A caller input whose engines open only once the test says so (`opened()`), its open() already under way: what the
 * caller says meanwhile is held for the VAD.
 */
function setupOpeningLate(options: Omit<Parameters<typeof setup>[0], 'vadOpens'> = {}) {
  let release!: () => void;
  const s = setup({ ...options, vadOpens: new Promise<void>((resolve) => (release = resolve)) });
  const opening = s.caller.open();
  return {
    ...s,
    /** The engines open now; resolves once the caller input is open. */
    async opened(): Promise<void> {
      release();
      await opening;
    },
  };
}

describe('CallerInput', () => {
  it('ends a turn endpointing_ms after the speech end, with the words and the times of the speech on the call clock', async () => {
    const s = setup({ heard: ['my name is ann'] });
    await s.caller.open();
    await s.feed(1000, 0);
    await s.feed(800, SPEECH);
    await s.feed(1000, 0);
    expect(s.log).toEqual(['speechStarted', 'recognised', 'userTurn']);
    expect(s.turns).toEqual([{ text: 'my name is ann', startAt: 1, endAt: 1.8, speechEndWall: T0 + 1800, at: 2300 }]);
  });

  it('keeps a pause shorter than the end-of-turn wait inside one turn', async () => {
    const s = setup({ heard: ['tomorrow at three'] });
    await s.caller.open();
    await s.feed(400, 0);
    await s.feed(400, SPEECH);
    await s.feed(300, 0);
    await s.feed(400, SPEECH);
    await s.feed(1200, 0);
    expect(s.turns.map(({ startAt, endAt }) => [startAt, endAt])).toEqual([[0.4, 1.5]]);
    expect(s.stt.heard).toEqual(['tomorrow at three']);
  });

  it('ends the turn in the very tick the VAD reports the pause when the policy says no more waiting', async () => {
    const s = setup({ heard: ['yes'], policy: { waitMs: () => 0 } });
    await s.caller.open();
    await s.feed(400, 0);
    await s.feed(400, SPEECH);
    await s.feed(200, 0); // EnergyVad reports the pause after 200 ms of quiet
    expect(s.turns.map((t) => t.at)).toEqual([1000]);
  });

  it('with the semantic policy decides again when the reading of the pause arrives: a finished question ends sooner, an unfinished phrase waits longer', async () => {
    const policy = new SemanticEndOfTurn({ minMs: 240, maxMs: 2000, unsureMs: 500 });
    const finished = setup({ heard: ['what time do you open?'], policy });
    await finished.caller.open();
    await finished.feed(400, 0);
    await finished.feed(400, SPEECH);
    await finished.feed(200, 0); // the VAD reports the pause: no words yet, and the reading asked for is awaited
    finished.partial('What time do you open?');
    await finished.feed(100, 0);
    expect(finished.turns.map((t) => Math.round(t.at))).toEqual([1040]); // 240 ms after the speech ended

    const unfinished = setup({ heard: ['i would like to book and'], policy });
    await unfinished.caller.open();
    await unfinished.feed(400, 0);
    await unfinished.feed(400, SPEECH);
    await unfinished.feed(200, 0);
    unfinished.partial('I would like to book and');
    await unfinished.feed(1_700, 0);
    expect(unfinished.turns).toEqual([]); // still waiting for the rest
    await unfinished.feed(200, 0);
    expect(unfinished.turns.map((t) => Math.round(t.at))).toEqual([2800]); // 2000 ms after the speech ended
  });

  it("reads digits against the agent's question: the last four digits of a card end the turn min_ms after the pause, as a phone number's start they wait max_ms, unasked they are whole as read in one run", async () => {
    const policy = new SemanticEndOfTurn({ minMs: 240, maxMs: 2000, unsureMs: 500 });
    const answered = async (asked?: string) => {
      const s = setup({ heard: ['six six one two'], policy, ...(asked ? { asked } : {}) });
      await s.caller.open();
      await s.feed(400, 0);
      await s.feed(400, SPEECH);
      await s.feed(200, 0);
      s.partial('Six, six, one, two.');
      await s.feed(2_000, 0);
      return s.turns.map((t) => Math.round(t.at));
    };
    expect(await answered('Thanks. Could you read me the last four digits of the card?')).toEqual([1040]);
    expect(await answered('And what number can I call you back on?')).toEqual([2800]);
    expect(await answered()).toEqual([1040]); // of no known length, but four digits with no pause: whole
  });

  it('learns the caller\'s pace from a pause in doubt they spoke on from: their next words that do not tell wait that long, a pause after "and" teaches nothing', async () => {
    const policy = new SemanticEndOfTurn({ minMs: 240, maxMs: 2000, unsureMs: 500 });
    /** A turn that pauses 400 ms after `first`, goes on, and ends on a finished sentence; when that turn ended. */
    const turnAfterPause = async (first: string) => {
      const s = setup({ heard: ['I need a plumber today.', 'That is all.'], policy });
      await s.caller.open();
      await s.feed(400, 0);
      await s.feed(400, SPEECH);
      await s.feed(200, 0);
      s.partial(first);
      await s.feed(200, 0); // 400 ms of pause, then the caller goes on
      await s.feed(400, SPEECH);
      await s.feed(200, 0);
      s.partial('I need a plumber today.');
      await s.feed(1_000, 0);
      expect(s.turns).toHaveLength(1);
      // The second turn: a finished sentence.
      await s.feed(400, SPEECH);
      await s.feed(200, 0);
      s.partial('that is all');
      await s.feed(1_000, 0);
      return s.turns.map((t) => Math.round(t.at));
    };
    // "i need a plumber" was in doubt (words that do not tell, 500 ms): the 400 ms pause sets the pace, 400 + 250 ms.
    const paced = await turnAfterPause('i need a plumber');
    // After "and" the policy waited its longest anyway: no pace, and the next words that do not tell wait 500 ms.
    const unpaced = await turnAfterPause('I need a plumber and');
    // The VAD hears the pause to within a frame or two (20 ms each).
    expect(paced[1]! - unpaced[1]!).toBeGreaterThanOrEqual(650 - 500);
    expect(paced[1]! - unpaced[1]!).toBeLessThanOrEqual(650 - 500 + 40);
  });

  it('learns the pauses between groups of digits apart from other pauses: a number of no known length waits the first, not the second', async () => {
    const policy = new SemanticEndOfTurn({ minMs: 240, maxMs: 2000, unsureMs: 500 });
    const heard = ['I need a plumber today.', 'My account number is 4 2 7.', 'My order number is 5 5 1.'];
    const s = setup({ heard: [...heard], policy });
    await s.caller.open();
    await s.feed(400, 0);
    const say = speaker(s);
    await say('i need a plumber', 400); // a pause to think, in doubt (the unsure wait): the caller's pace is 650 ms
    await say(heard[0]!, 1_000);
    await say(heard[1]!, 2_000);
    await say('My order number is 5 5', 700); // half a named number, waited on: a pause between groups
    await say(heard[2]!, 2_000);
    const waits = s.turns.map((t) => Math.round(t.at - t.endAt * 1000));
    expect(s.turns.map((t) => t.text)).toEqual(heard);
    // The VAD hears a pause to within a frame (20 ms).
    expect(Math.abs(waits[1]! - 500)).toBeLessThanOrEqual(20); // no pause between groups yet: the unsure wait
    expect(Math.abs(waits[2]! - (700 + 250))).toBeLessThanOrEqual(20); // that pause and the margin
  });

  it('answers a number read in one run of four digits since the pause before at min_ms, a shorter run at the pace between groups', async () => {
    const policy = new SemanticEndOfTurn({ minMs: 240, maxMs: 2000, unsureMs: 500 });
    const heard = ['The policy number is 5 0 0 8 3 7 2.', 'My order number is 4 4 1.'];
    const s = setup({ heard: [...heard], policy });
    await s.caller.open();
    await s.feed(400, 0);
    const say = speaker(s);
    await say('The policy number is 5 0 0', 400); // a first group, and a pause between groups
    await say(heard[0]!, 2_000); // four digits in one run since that pause
    await say('My order number is 4 4', 400);
    await say(heard[1]!, 2_000); // one digit since the pause: a group of a number still being read, maybe
    const waits = s.turns.map((t) => Math.round(t.at - t.endAt * 1000));
    expect(s.turns.map((t) => t.text)).toEqual(heard);
    // The VAD hears a pause to within a frame (20 ms).
    expect(Math.abs(waits[0]! - 240)).toBeLessThanOrEqual(20);
    // The caller's pause between groups, and the margin.
    expect(Math.abs(waits[1]! - (400 + 250))).toBeLessThanOrEqual(20);
  });

  it("learns the caller's pace from talking over the answer to a turn that was not over: the pause they made is theirs", async () => {
    const policy = new SemanticEndOfTurn({ minMs: 240, maxMs: 2000, unsureMs: 500 });
    const s = setup({ heard: ['i need a plumber', 'for the kitchen sink', 'That is all.'], policy });
    await s.caller.open();
    await s.feed(400, 0);
    await s.feed(400, SPEECH); // speech ends at 800 ms
    await s.feed(200, 0);
    s.partial('i need a plumber');
    await s.feed(600, 0); // the turn ends 500 ms after the speech, and the agent answers
    expect(s.turns).toHaveLength(1);
    s.state.agentBusy = true;
    s.stt.onReadNow = () => s.partial('for the kitchen sink');
    await s.feed(1_000, SPEECH); // the caller goes on 800 ms after their last word, over the answer
    expect(s.log).toContain('interruption');
    s.state.agentBusy = false;
    s.stt.onReadNow = null;
    await s.feed(200, 0);
    s.partial('for the kitchen sink');
    await s.feed(2_000, 0);
    // Words that do not tell now wait the caller's 800 ms pause and the margin, not 500 ms (to within a VAD frame).
    const second = s.turns[1]!;
    expect(Math.abs(second.at - second.endAt * 1000 - (800 + 250))).toBeLessThanOrEqual(20);
  });

  describe('going on over the answer to their own turn', () => {
    /** A turn ended and answered; the agent is still talking when the test goes on. */
    const answered = async (heard: string[]) => {
      const s = setup({ heard });
      await s.caller.open();
      await s.feed(400, 0);
      await s.feed(400, SPEECH); // speech ends at 800 ms
      await s.feed(200, 0);
      s.partial(heard[0]!);
      await s.feed(400, 0); // the turn ends 500 ms after the speech, and the agent answers
      expect(s.turns).toHaveLength(1);
      s.state.agentBusy = true;
      return s;
    };

    it('begun within goingOnWithinMs of the agent taking the turn, their speech stops the agent after goingOnMs, not the threshold, without waiting for a reading', async () => {
      const s = await answered(['i need her', 'to call me back']);
      await s.feed(200, 0); // they go on 700 ms after their last word, 200 ms into the answer
      const [before, reads] = [s.log.length, s.stt.readsNow];
      await s.feed(CALLER_DEFAULTS.goingOnMs - 20, SPEECH);
      expect(s.log.slice(before)).toEqual(['speechStarted']);
      await s.feed(40, SPEECH); // the VAD hears the start a frame in
      expect(s.log.slice(before)).toEqual(['speechStarted', 'interruption']);
      expect(s.stt.readsNow).toBe(reads);
    });

    it('an acknowledgement read by then does not stop the agent', async () => {
      const s = await answered(['i need her', 'okay']);
      await s.feed(200, 0);
      const before = s.log.length;
      await s.feed(100, SPEECH);
      s.partial('Okay.');
      await s.feed(400, SPEECH);
      expect(s.log.slice(before)).toEqual(['speechStarted']);
    });

    it('later, speech over the answer is an interruption as any other: the threshold, then a reading', async () => {
      const s = await answered(['i need her', 'stop']);
      await s.feed(CALLER_DEFAULTS.goingOnWithinMs, 0);
      const [before, reads] = [s.log.length, s.stt.readsNow];
      await s.feed(600, SPEECH);
      expect(s.log.slice(before)).toEqual(['speechStarted']);
      expect(s.stt.readsNow).toBe(reads + 1); // asked at the threshold; the cut waits for it (ackReadWaitMs)
    });
  });

  it("tells the recogniser of the VAD's pause, and decides at once on the reading it gives back", async () => {
    const s = setup({
      heard: ['what time do you open?'],
      policy: new SemanticEndOfTurn({ minMs: 240, maxMs: 2000, unsureMs: 500 }),
    });
    s.stt.onReadNow = () => s.partial('What time do you open?');
    await s.caller.open();
    await s.feed(400, 0);
    await s.feed(400, SPEECH);
    await s.feed(200, 0); // the VAD reports the pause; the recogniser had read it already
    expect(s.stt.readsNow).toBe(1);
    await s.feed(60, 0);
    // min_ms after the speech ended, not the 500 ms of no words
    expect(s.turns.map((t) => Math.round(t.at))).toEqual([1040]);
  });

  it("weighs the recogniser's own end of turn: words that do not tell end min_ms after the pause once it says the turn is over, and words read after it withdraw it", async () => {
    const policy = new SemanticEndOfTurn({ minMs: 240, maxMs: 2000, unsureMs: 500 });
    const ended = setup({ heard: ['my name is john smith'], policy });
    ended.stt.onReadNow = () => ended.partial('my name is john smith');
    await ended.caller.open();
    await ended.feed(400, 0);
    await ended.feed(400, SPEECH);
    ended.partial('my name is john smith');
    ended.sttEvents.current?.endOfTurn?.({ confidence: null }); // a streaming provider's endpoint
    await ended.feed(300, 0);
    expect(ended.turns.map((t) => Math.round(t.at))).toEqual([1040]); // min_ms, not the unsure 500

    const withdrawn = setup({ heard: ['my name is john smith'], policy });
    withdrawn.stt.onReadNow = () => withdrawn.partial('my name is john smith');
    await withdrawn.caller.open();
    await withdrawn.feed(400, 0);
    await withdrawn.feed(400, SPEECH);
    withdrawn.partial('my name');
    withdrawn.sttEvents.current?.endOfTurn?.({ confidence: 0.9 });
    withdrawn.partial('my name is john smith'); // the caller went on after the provider's verdict
    await withdrawn.feed(600, 0);
    expect(withdrawn.turns.map((t) => Math.round(t.at))).toEqual([1300]); // the unsure 500: no verdict left
  });

  it("logs at each turn's end whether the recogniser's verdict decided it (shortened the wait the words and silence set)", async () => {
    const policy = new SemanticEndOfTurn({ minMs: 240, maxMs: 2000, unsureMs: 500 });
    const ends: unknown[] = [];
    const log = pino(
      { level: 'debug' },
      {
        write: (line: string) => {
          const entry = JSON.parse(line) as { msg: string; recogniser_decided?: boolean };
          if (entry.msg === 'end of turn') ends.push(entry.recogniser_decided);
        },
      },
    );
    const s = setup({ heard: ['my name is john smith', 'that works for me.'], policy, log });
    let reading = '';
    s.stt.onReadNow = () => s.partial(reading);
    await s.caller.open();
    await s.feed(400, 0);
    // Words that do not tell, and the provider's endpoint: its verdict ends the turn at min_ms.
    await s.feed(400, SPEECH);
    reading = 'my name is john smith';
    s.partial(reading);
    s.sttEvents.current?.endOfTurn?.({ confidence: null });
    await s.feed(600, 0);
    // A finished sentence ends at min_ms with or without the verdict: the words decided.
    await s.feed(400, SPEECH);
    reading = 'That works for me.';
    s.partial(reading);
    s.sttEvents.current?.endOfTurn?.({ confidence: null });
    await s.feed(600, 0);
    expect(s.turns).toHaveLength(2);
    expect(ends).toEqual([true, false]);
  });

  it("takes a callee's few words before the agent spoke on an outbound call as how they picked up: min_ms, whatever the recogniser's punctuation", async () => {
    const policy = new SemanticEndOfTurn({ minMs: 240, maxMs: 2000, unsureMs: 500 });
    const answered = async (options: { outbound: boolean; asked?: string }) => {
      const s = setup({ heard: ['to the loaf'], policy, ...options });
      await s.caller.open();
      await s.feed(400, 0);
      await s.feed(400, SPEECH);
      await s.feed(200, 0);
      s.partial('To the loaf,'); // one flite voice's "Hello?", with a comma
      await s.feed(1_700, 0);
      return s.turns.map((t) => Math.round(t.at));
    };
    expect(await answered({ outbound: true })).toEqual([1040]);
    // A trailing comma waits three quarters of the way to max_ms (1,625 ms): on an inbound call, or once the agent has
    // spoken.
    for (const other of [{ outbound: false }, { outbound: true, asked: 'Hi, this is Sam from the clinic.' }])
      expect((await answered(other))[0]).toBeGreaterThan(2000);
  });

  it('waits past the unsure wait for the reading it asked for (a slow recogniser), then decides on its words', async () => {
    const s = setup({
      heard: ['i want to book a cleaning and'],
      policy: new SemanticEndOfTurn({ minMs: 240, maxMs: 2000, unsureMs: 500 }),
    });
    await s.caller.open();
    await s.feed(400, 0);
    await s.feed(400, SPEECH);
    await s.feed(200, 0); // the VAD reports the pause and asks for the reading
    expect(s.stt.readsNow).toBe(1);
    await s.feed(600, 0); // 800 ms of silence: past the unsure 500, the words not yet read
    expect(s.turns).toEqual([]);
    s.partial('I want to book a cleaning and'); // unfinished: max_ms from the speech end
    await s.feed(1_100, 0);
    expect(s.turns).toEqual([]);
    await s.feed(200, 0);
    expect(s.turns.map((t) => Math.round(t.at))).toEqual([2800]);
  });

  it('ends the turn at the unsure wait once the reading it asked for holds no words', async () => {
    const s = setup({ heard: [''], policy: new SemanticEndOfTurn({ minMs: 240, maxMs: 2000, unsureMs: 500 }) });
    await s.caller.open();
    await s.feed(400, 0);
    await s.feed(400, SPEECH);
    await s.feed(200, 0);
    s.partial('');
    await s.feed(320, 0);
    // decided 500 ms after the speech end, and no words make no turn
    expect(s.log).toEqual(['speechStarted', 'recognised', 'noTurn']);
  });

  it('gives the recogniser the 300 ms before the speech start the VAD reported, and every frame while the caller speaks', async () => {
    const s = setup();
    await s.caller.open();
    await s.feed(1000, 0);
    await s.feed(800, SPEECH);
    expect(s.stt.pushed).toBe((0.3 + 0.8) * 16000);
  });

  it('resamples what the recogniser hears to its own rate', async () => {
    const s = setup({ rate: 8000, sttRate: 16000 });
    await s.caller.open();
    await s.feed(1000, 0);
    await s.feed(800, SPEECH);
    // 1.1 s at 16 kHz, less what the resampler still holds.
    expect(s.stt.pushed).toBeGreaterThan(1.09 * 16000);
    expect(s.stt.pushed).toBeLessThanOrEqual(1.1 * 16000);
  });

  it('over the agent, interrupts only once the caller has talked past the threshold', async () => {
    const s = setup({ heard: ['stop please'] });
    s.stt.onReadNow = () => s.partial('stop please');
    await s.caller.open();
    s.state.agentBusy = true;
    await s.feed(300, 0);
    await s.feed(500, SPEECH);
    expect(s.log).toEqual(['speechStarted']);
    await s.feed(200, SPEECH);
    expect(s.log).toEqual(['speechStarted', 'interruption', 'partial:stop please']);
  });

  describe('acknowledgements over the agent', () => {
    it('speech read as acknowledgements while it is said never stops the agent, whatever its length, and is no turn', async () => {
      const s = setup({ heard: ['uh-huh right right'] });
      s.stt.onReadNow = () => s.partial('Uh-huh, right, right.');
      await s.caller.open();
      s.state.agentBusy = true;
      await s.feed(300, 0);
      await s.feed(400, SPEECH);
      s.partial('Uh-huh,');
      await s.feed(2000, SPEECH); // far past the 600 ms threshold
      s.partial('Uh-huh, right,');
      await s.feed(1000, 0);
      expect(s.log).toEqual(['speechStarted', 'noTurn']);
      expect(s.stt.cancels).toBe(1);
      expect(s.turns).toEqual([]);
      expect(s.caller.speaking).toBe(false);
    });

    it('words after an acknowledgement paused are speech of their own: a late reading of the acknowledgement never drops them', async () => {
      const s = setup({ heard: ['wait stop'] });
      await s.caller.open();
      s.state.agentBusy = true;
      await s.feed(300, 0);
      await s.feed(400, SPEECH);
      s.partial('Right,');
      await s.feed(600, SPEECH); // past the threshold, read as an acknowledgement: the agent goes on
      await s.feed(300, 0); // its pause: the reading of all of it is asked for, and is slow
      s.state.agentBusy = false; // the agent finished meanwhile
      await s.feed(800, SPEECH);
      await s.feed(300, 0);
      s.partial('Right, okay,'); // the slow reading of the acknowledgement, after the new words' pause
      await s.feed(2000, 0);
      expect(s.log.filter((e) => e === 'interruption')).toEqual([]);
      expect(s.turns.map((t) => t.text)).toEqual(['wait stop']);
    });

    it('words that are not acknowledgements stop the agent at the threshold when read by then', async () => {
      const s = setup({ heard: ['wait stop'] });
      await s.caller.open();
      s.state.agentBusy = true;
      await s.feed(300, 0);
      await s.feed(400, SPEECH);
      s.partial('Wait,');
      await s.feed(200, SPEECH);
      expect(s.log).toEqual(['speechStarted', 'interruption']);
      expect(s.stt.readsNow).toBe(0);
    });

    it('an acknowledgement that goes on into other words stops the agent as soon as a reading says so, and is a turn', async () => {
      const s = setup({ heard: ['okay but when do you open'] });
      await s.caller.open();
      s.state.agentBusy = true;
      await s.feed(300, 0);
      await s.feed(400, SPEECH);
      s.partial('Okay,');
      await s.feed(1000, SPEECH);
      expect(s.log).toEqual(['speechStarted']);
      s.partial('Okay, but when do you open');
      expect(s.log).toEqual(['speechStarted', 'interruption', 'partial:Okay, but when do you open']);
      await s.feed(1000, 0);
      expect(s.turns.map((t) => t.text)).toEqual(['okay but when do you open']);
    });

    it('an acknowledgement whose last reading at its pause holds more words is a turn, and stops the agent then', async () => {
      const s = setup({ heard: ['uh-huh what time'] });
      s.stt.onReadNow = () => s.partial('Uh-huh, what time?');
      await s.caller.open();
      s.state.agentBusy = true;
      await s.feed(300, 0);
      await s.feed(300, SPEECH);
      s.partial('Uh-huh,');
      await s.feed(900, SPEECH);
      expect(s.log).toEqual(['speechStarted']);
      await s.feed(1000, 0);
      expect(s.log.slice(0, 2)).toEqual(['speechStarted', 'interruption']);
      expect(s.turns.map((t) => t.text)).toEqual(['uh-huh what time']);
    });

    it('with no reading yet at the threshold, asks for one and cuts on it; none within ackReadWaitMs cuts as before', async () => {
      const read = setup({ heard: ['stop'] });
      read.stt.onReadNow = () => queueMicrotask(() => read.partial('Stop.'));
      await read.caller.open();
      read.state.agentBusy = true;
      await read.feed(300, 0);
      await read.feed(700, SPEECH);
      expect(read.stt.readsNow).toBe(1);
      expect(read.log).toEqual(['speechStarted', 'interruption', 'partial:Stop.']);

      const unread = setup({ heard: ['stop'] });
      await unread.caller.open();
      unread.state.agentBusy = true;
      await unread.feed(300, 0);
      await unread.feed(600 + CALLER_DEFAULTS.ackReadWaitMs - 40, SPEECH);
      expect(unread.log).toEqual(['speechStarted']);
      await unread.feed(60, SPEECH);
      expect(unread.log).toEqual(['speechStarted', 'interruption']);
    });
  });

  it('over the agent, speech that lasted past the threshold on the audio clock interrupts even when it all arrives at once (a stalled stream catching up)', async () => {
    const s = setup({ heard: ['goodbye'] });
    s.stt.onReadNow = () => s.partial('Goodbye.');
    await s.caller.open();
    s.state.agentBusy = true;
    await s.feed(300, 0);
    // The stream stalls for a second and a half, then its frames come together: 0.9 s of speech and its pause.
    s.timers.advance(1500);
    for (let i = 0; i < 45; i++) s.caller.audio(frame(i < 5 ? 0 : SPEECH, 16000));
    await settle();
    for (let i = 0; i < 15; i++) s.caller.audio(frame(0, 16000));
    await settle();
    await s.feed(1000, 0);
    expect(s.log.slice(0, 2)).toEqual(['speechStarted', 'interruption']);
    expect(s.turns.map((t) => t.text)).toEqual(['goodbye']);
  });

  describe('speech over the agent shorter than the threshold', () => {
    /** The agent talking, then 200 ms of the caller's speech (threshold 600 ms) and its pause. */
    async function shortOverAgent(reading: string | null, options: { heard?: string[] } = {}) {
      const s = setup({ heard: options.heard ?? [reading ?? ''] });
      if (reading !== null) s.stt.onReadNow = () => queueMicrotask(() => s.partial(reading));
      await s.caller.open();
      s.state.agentBusy = true;
      await s.feed(300, 0);
      await s.feed(200, SPEECH);
      return s;
    }

    it('read as an acknowledgement at its pause, it is no turn, and the recogniser drops it', async () => {
      const s = await shortOverAgent('Uh-huh.');
      await s.feed(1000, 0);
      expect(s.stt.readsNow).toBe(1);
      expect(s.log).toEqual(['speechStarted', 'noTurn']);
      expect(s.stt.cancels).toBe(1);
      expect(s.stt.heard).toEqual([]);
      expect(s.caller.speaking).toBe(false);
    });

    it('read as words that are not acknowledgements ("Stop."), it stops the agent and is a turn', async () => {
      const s = await shortOverAgent('Stop.', { heard: ['stop'] });
      await s.feed(240, 0); // the VAD hears the pause 200 ms into it
      expect(s.log).toEqual(['speechStarted', 'interruption', 'partial:Stop.']);
      await s.feed(1000, 0);
      expect(s.turns.map((t) => t.text)).toEqual(['stop']);
    });

    it('read as no words, or not read within shortReadWaitMs, it was a sound: no turn, and the agent was never stopped', async () => {
      const empty = await shortOverAgent('.');
      await empty.feed(240, 0);
      expect(empty.log).toEqual(['speechStarted', 'noTurn']);

      const unread = await shortOverAgent(null);
      await unread.feed(200 + CALLER_DEFAULTS.shortReadWaitMs - 40, 0);
      expect(unread.caller.speaking).toBe(true);
      await unread.feed(60, 0);
      expect(unread.log).toEqual(['speechStarted', 'noTurn']);
      expect(unread.caller.speaking).toBe(false);
    });

    it('read late ("Stop." 3 s after its pause, the recogniser held back by other work on the machine), it still stops the agent and is a turn', async () => {
      const s = await shortOverAgent(null, { heard: ['stop'] });
      await s.feed(3000, 0);
      expect(s.log).toEqual(['speechStarted']);
      s.partial('Stop.');
      expect(s.log).toEqual(['speechStarted', 'interruption', 'partial:Stop.']);
      await s.feed(1000, 0);
      expect(s.turns.map((t) => t.text)).toEqual(['stop']);
    });

    it('still being read when the agent finishes, it joins the words the caller goes on with: a turn, not a sound let go', async () => {
      const s = await shortOverAgent(null, { heard: ['hello are you there'] });
      await s.feed(400, 0);
      s.state.agentBusy = false;
      await s.feed(800, SPEECH);
      await s.feed(3000, 0);
      expect(s.log).not.toContain('noTurn');
      expect(s.turns.map((t) => t.text)).toEqual(['hello are you there']);
    });

    it('a word said as the agent finishes is a turn of its own, with no interruption', async () => {
      const s = await shortOverAgent('No.', { heard: ['no'] });
      s.state.agentBusy = false;
      await s.feed(1000, 0);
      expect(s.log).toEqual(['speechStarted', 'partial:No.', 'recognised', 'userTurn']);
      expect(s.turns.map((t) => t.text)).toEqual(['no']);
    });

    it('speech that goes on before its reading comes is judged as new speech at the threshold: acknowledgements never stop the agent', async () => {
      const s = await shortOverAgent(null, { heard: ['uh-huh'] });
      await s.feed(300, 0); // its reading is asked for, and is slow
      s.stt.onReadNow = () => s.partial('Uh-huh, mm-hmm,');
      await s.feed(700, SPEECH); // past the threshold from where it went on
      expect(s.log).toEqual(['speechStarted', 'speechStarted']);
      await s.feed(1000, 0);
      expect(s.log).toEqual(['speechStarted', 'speechStarted', 'noTurn']);
    });
  });

  it('the model’s own turn detection ends a paused turn at once, without the policy’s wait', async () => {
    const s = setup({ heard: ['what time is it'], policy: new SilenceEndOfTurn(3000) });
    await s.caller.open();
    await s.feed(400, 0);
    await s.feed(600, SPEECH);
    await s.feed(300, 0);
    expect(s.turns).toEqual([]);
    const noTurn = vi.fn();
    s.caller.endTurnNow(noTurn);
    await settle();
    expect(noTurn).not.toHaveBeenCalled();
    expect(s.log).toEqual(['speechStarted', 'recognised', 'userTurn']);
    expect(s.turns.map(({ startAt, endAt }) => [startAt, endAt])).toEqual([[0.4, 1]]);
  });

  it('the model’s own turn detection ending a turn the VAD still hears ends it at the VAD’s pause; with no turn under way or being read it is refused', async () => {
    const s = setup({ heard: ['hello there'], policy: new SilenceEndOfTurn(3000) });
    await s.caller.open();
    const noTurn = vi.fn();
    s.caller.endTurnNow(noTurn);
    expect(noTurn).toHaveBeenCalledTimes(1);
    await s.feed(400, 0);
    await s.feed(400, SPEECH);
    s.caller.endTurnNow(noTurn);
    await s.feed(200, SPEECH);
    expect(s.turns).toEqual([]);
    await s.feed(200, 0);
    expect(s.log).toEqual(['speechStarted', 'recognised', 'userTurn']);
    expect(s.turns.map(({ startAt, endAt }) => [startAt, endAt])).toEqual([[0.4, 1]]);
    expect(noTurn).toHaveBeenCalledTimes(1);
    s.caller.endTurnNow(noTurn);
    expect(noTurn).toHaveBeenCalledTimes(2);
  });

  it('the model’s own turn detection ending a turn the VAD has not judged yet waits for it: speech in that audio is the turn, and none lets the model answer', async () => {
    // The engines open late: the model heard the caller's words seconds before the VAD catches up with them.
    const s = setupOpeningLate({ heard: ['is the office open'], policy: new SilenceEndOfTurn(3000) });
    await s.feed(400, 0);
    await s.feed(1200, SPEECH);
    await s.feed(500, 0);
    const noTurn = vi.fn();
    s.caller.endTurnNow(noTurn);
    await s.opened();
    await s.feed(100, 0);
    await settle();
    expect(noTurn).not.toHaveBeenCalled();
    expect(s.turns.map(({ text, startAt, endAt }) => [text, startAt, endAt])).toEqual([
      ['is the office open', 0.4, 1.6],
    ]);

    // Later, the model answers audio in which the VAD, still behind, finds no speech: the model's answer is taken.
    const quiet = setupOpeningLate({ heard: [], policy: new SilenceEndOfTurn(3000) });
    await quiet.feed(1000, 0);
    quiet.caller.endTurnNow(noTurn);
    expect(noTurn).not.toHaveBeenCalled();
    await quiet.opened();
    await quiet.feed(100, 0);
    expect(noTurn).toHaveBeenCalledTimes(1);
    expect(quiet.turns).toEqual([]);
  });

  it('speech under the agent the model heard is a turn, not a backchannel', async () => {
    const s = setup({ heard: ['wait'], policy: new SilenceEndOfTurn(500) });
    await s.caller.open();
    s.state.agentBusy = true;
    await s.feed(300, 0);
    await s.feed(200, SPEECH);
    s.caller.confirmSpeech();
    await s.feed(1000, 0);
    expect(s.log).toEqual(['speechStarted', 'recognised', 'userTurn']);
    expect(s.turns.map((t) => t.text)).toEqual(['wait']);
  });

  it('with the model’s own turn detection, speech over the agent stops it on the model’s word while the model would give one, and at the threshold once it would not (its turn complete, its audio playing on)', async () => {
    const model = { reports: true };
    const s = setup({
      heard: ['hold on', 'hold on a second'],
      policy: new SilenceEndOfTurn(500),
      modelReportsSpeech: () => model.reports,
    });
    await s.caller.open();
    s.state.agentBusy = true;
    await s.feed(300, 0);
    await s.feed(1000, SPEECH); // the model said nothing: not its caller starting
    await s.feed(1000, 0);
    expect(s.log).toEqual(['speechStarted', 'noTurn']);
    model.reports = false;
    s.stt.onReadNow = () => s.partial('hold on a');
    await s.feed(1000, SPEECH);
    expect(s.log).toEqual(['speechStarted', 'noTurn', 'speechStarted', 'interruption', 'partial:hold on a']);
    s.state.agentBusy = false;
    await s.feed(1000, 0);
    expect(s.log.slice(-2)).toEqual(['recognised', 'userTurn']);
  });

  it('makes no turn of noise the recogniser hears no words in', async () => {
    const s = setup({ heard: ['  '] });
    await s.caller.open();
    await s.feed(400, 0);
    await s.feed(300, SPEECH);
    await s.feed(1000, 0);
    expect(s.log).toEqual(['speechStarted', 'recognised', 'noTurn']);
  });

  it('a recogniser that fails to finalize costs that turn only: the caller is asked again and the next turn is heard by a new one', async () => {
    const s = setup({ heard: ['x'], heardAfterReopen: ['my name is ann'] });
    s.stt.failNext = true;
    await s.caller.open();
    await s.feed(400, 0);
    await s.feed(400, SPEECH);
    await s.feed(1000, 0);
    expect(s.log).toEqual(['speechStarted', 'unheard']);
    expect(s.stts).toHaveLength(2);
    await s.feed(400, SPEECH);
    await s.feed(1000, 0);
    expect(s.log).toEqual(['speechStarted', 'unheard', 'speechStarted', 'recognised', 'userTurn']);
    expect(s.turns.map((t) => t.text)).toEqual(['my name is ann']);
  });

  it('a recogniser that dies while the caller speaks loses that turn once (no turn from its end), and the next turn is heard', async () => {
    const s = setup({ heard: ['never read'], heardAfterReopen: ['half a sentence', 'yes please'] });
    await s.caller.open();
    await s.feed(400, 0);
    await s.feed(400, SPEECH);
    const dying = s.sttEvents.current!;
    dying.error?.(Object.assign(new Error('the machine recogniser exited'), { code: 'STT_ENGINE_CRASHED' }));
    await s.feed(300, SPEECH);
    await s.feed(1000, 0);
    expect(s.log).toEqual(['speechStarted', 'unheard']);
    expect(s.stts[1]!.cancels).toBe(1);
    await s.feed(400, SPEECH);
    await s.feed(1000, 0);
    expect(s.turns.map((t) => t.text)).toEqual(['half a sentence']);
    expect(s.log.filter((l) => l.startsWith('failed'))).toEqual([]);
  });

  it('with recognisers left to move to, each failed one is replaced by the next at once, not after the reopening waits', async () => {
    const s = setup({ heard: ['x'], heardAfterReopen: ['my name is ann'], fallback: { left: 2, deadlineMs: 3_000 } });
    s.stt.failNext = true;
    await s.caller.open();
    await s.feed(400, 0);
    await s.feed(400, SPEECH);
    await s.feed(1000, 0);
    expect(s.stts).toHaveLength(2);
    s.stts[1]!.failNext = true;
    await s.feed(400, SPEECH);
    await s.feed(600, 0);
    await settle();
    // Without a fallback, a second failure in a row waits a second before another opens.
    expect(s.stts).toHaveLength(3);
    expect(s.moves).toEqual(['error', 'error']);
    expect(s.log).toEqual(['speechStarted', 'unheard', 'speechStarted', 'unheard']);
    await s.feed(400, SPEECH);
    await s.feed(1000, 0);
    expect(s.turns.map((t) => t.text)).toEqual(['my name is ann']);
  });

  it('a recogniser with another after it that gives no final text by its deadline is left for the next; the turn is asked again', async () => {
    const s = setup({
      first: new SilentStt([]),
      heardAfterReopen: ['yes please'],
      fallback: { left: 1, deadlineMs: 3_000 },
    });
    await s.caller.open();
    await s.feed(400, 0);
    await s.feed(400, SPEECH);
    await s.feed(500, 0);
    expect(s.log).toEqual(['speechStarted']);
    await s.feed(3_100, 0);
    expect(s.moves).toEqual(['timeout']);
    expect(s.log).toEqual(['speechStarted', 'unheard']);
    expect(s.stts).toHaveLength(2);
    await s.feed(400, SPEECH);
    await s.feed(1000, 0);
    expect(s.turns.map((t) => t.text)).toEqual(['yes please']);
  });

  it('a recogniser late with its final text that gave words while the caller spoke is left for the next; those words are the turn, not asked again', async () => {
    const s = setup({
      first: new SilentStt([]),
      heardAfterReopen: ['yes please'],
      fallback: { left: 1, deadlineMs: 3_000 },
    });
    await s.caller.open();
    await s.feed(400, 0);
    await s.feed(400, SPEECH);
    await s.feed(200, 0);
    s.partial('my name is john');
    await s.feed(3_400, 0);
    expect(s.moves).toEqual(['timeout']);
    expect(s.log).not.toContain('unheard');
    expect(s.turns.map((t) => [t.text, t.startAt, t.endAt])).toEqual([['my name is john', 0.4, 0.8]]);
    expect(s.stts).toHaveLength(2);
    await s.feed(400, SPEECH);
    await s.feed(1000, 0);
    expect(s.turns.map((t) => t.text)).toEqual(['my name is john', 'yes please']);
  });

  it('the last recogniser has no deadline: a slow final text is waited for', async () => {
    const s = setup({ first: new SilentStt([]), fallback: { left: 0, deadlineMs: 3_000 } });
    await s.caller.open();
    await s.feed(400, 0);
    await s.feed(400, SPEECH);
    await s.feed(10_000, 0);
    expect(s.moves).toEqual([]);
    expect(s.log).toEqual(['speechStarted']);
    expect(s.stts).toHaveLength(1);
  });

  it('a streaming recogniser with another after it that gives no result while the caller speaks past its first-result deadline is left for the next, as a late final text is', async () => {
    const s = setup({
      first: new StreamingStt(['never read']),
      heardAfterReopen: ['yes please'],
      fallback: { left: 1, deadlineMs: 3_000 },
    });
    await s.caller.open();
    await s.feed(400, 0);
    await s.feed(2_900, SPEECH); // the speech start was heard at 420 ms: 2.88 s of speech, nothing back
    expect(s.moves).toEqual([]);
    await s.feed(200, SPEECH);
    expect(s.moves).toEqual(['timeout']);
    expect(s.log).toEqual(['speechStarted', 'unheard']);
    expect(s.stts).toHaveLength(2);
    // The speech it lost makes no turn; the next is heard by the next recogniser.
    await s.feed(1_000, 0);
    await s.feed(400, SPEECH);
    await s.feed(1_000, 0);
    expect(s.turns.map((t) => t.text)).toEqual(['yes please']);
    expect(s.moves).toEqual(['timeout']);
  });

  it('a streaming recogniser that gives results in time is kept however long the caller speaks, and its first-result deadline does not run while the caller is silent', async () => {
    const s = setup({ first: new StreamingStt(['a long story']), fallback: { left: 1, deadlineMs: 3_000 } });
    await s.caller.open();
    await s.feed(10_000, 0);
    await s.feed(2_000, SPEECH);
    s.partial('a long');
    await s.feed(6_000, SPEECH);
    await s.feed(1_000, 0);
    expect(s.moves).toEqual([]);
    expect(s.stts).toHaveLength(1);
    expect(s.turns.map((t) => t.text)).toEqual(['a long story']);
  });

  it('the first-result deadline counts speech only: pauses inside a turn start it again, and a caller who says nothing never trips it', async () => {
    const s = setup({ first: new StreamingStt(['one two three']), fallback: { left: 1, deadlineMs: 3_000 } });
    await s.caller.open();
    await s.feed(20_000, 0);
    expect(s.moves).toEqual([]);
    // 2.5 s of speech, a 300 ms pause (shorter than the end of turn), 2.5 s more: no 3 s of speech at a stretch.
    await s.feed(2_500, SPEECH);
    await s.feed(300, 0);
    await s.feed(2_500, SPEECH);
    await s.feed(1_000, 0);
    expect(s.moves).toEqual([]);
    expect(s.turns.map((t) => t.text)).toEqual(['one two three']);
  });

  it('the last recogniser, and a recogniser that reads only when asked, have no first-result deadline', async () => {
    const last = setup({ first: new StreamingStt(['x']), fallback: { left: 0, deadlineMs: 3_000 } });
    await last.caller.open();
    await last.feed(400, 0);
    await last.feed(6_000, SPEECH);
    expect(last.stts).toHaveLength(1);
    expect(last.log).toEqual(['speechStarted']);

    const asked = setup({ first: new ReadingStt(['y']), fallback: { left: 1, deadlineMs: 3_000 } });
    await asked.caller.open();
    await asked.feed(400, 0);
    await asked.feed(6_000, SPEECH);
    expect(asked.moves).toEqual([]);
    expect(asked.log).toEqual(['speechStarted']);
  });

  it('a first recogniser that cannot be opened hands the call to the next before the call starts listening', async () => {
    const s = setup({ heard: ['yes please'], refuseFirstOpen: true, fallback: { left: 1, deadlineMs: 3_000 } });
    await s.caller.open();
    expect(s.moves).toEqual(['connect']);
    await s.feed(400, 0);
    await s.feed(400, SPEECH);
    await s.feed(1000, 0);
    expect(s.turns.map((t) => t.text)).toEqual(['yes please']);
  });

  it('keeps trying to open a recogniser while none opens, and never ends the call for it', async () => {
    const timers = new ManualTimers(T0);
    const clock = new CallClock(timers);
    clock.connect();
    const log: string[] = [];
    let opens = 0;
    let events: SttStreamEvents | null = null;
    const caller = new CallerInput({
      rate: 16000,
      sttRate: 16000,
      clock,
      timers,
      engines: {
        openVad: async () => new EnergyVad(16000),
        openStt: async (e) => {
          opens++;
          events = e;
          if (opens > 1 && opens < 4) throw new Error('recogniser process is starting');
          return new ReadingStt([]);
        },
      },
      endOfTurn: new SilenceEndOfTurn(500),
      interruptionThresholdMs: 600,
      agentBusy: () => false,
      isAcknowledgement: () => false,
      events: quietCallerEvents({
        userTurn: () => log.push('userTurn'),
        failed: (message) => log.push(`failed:${message}`),
        unheard: () => log.push('unheard'),
      }),
      log: silentLog,
    });
    await caller.open();
    events!.error?.(Object.assign(new Error('crashed'), { code: 'STT_ENGINE_CRASHED' }));
    for (let i = 0; i < 10; i++) {
      timers.advance(1_000);
      await settle();
    }
    expect(opens).toBe(4);
    expect(log).toEqual([]);
  });

  it('reports a failed VAD once', async () => {
    const vad = new FailingVad(5);
    const s = setup({ vad });
    await s.caller.open();
    await s.feed(400, 0);
    expect(s.log).toEqual(['failed:Voice activity detection failed.']);
    expect(vad.pushes).toBe(5);
  });

  it('once stopped, hears nothing more and ends no turn already decided', async () => {
    const s = setup({ heard: ['never read'] });
    await s.caller.open();
    await s.feed(400, 0);
    await s.feed(400, SPEECH);
    await s.feed(260, 0); // the pause is reported; the end-of-turn wait is running
    s.caller.stop();
    await s.feed(1000, SPEECH);
    expect(s.log).toEqual(['speechStarted']);
    expect(s.stt.heard).toEqual([]);
    expect(s.timers.pendingCount).toBe(0);
  });

  it('never lets the audio clock run ahead of the wall: a burst of frames the page captured before the call does not shift later speech', async () => {
    const s = setup({ heard: ['hello'] });
    await s.caller.open();
    s.timers.advance(20);
    for (let i = 0; i < 25; i++) s.caller.audio(frame(0, 16000)); // half a second of audio at once
    await settle();
    await s.feed(400, 0);
    await s.feed(400, SPEECH);
    await s.feed(1000, 0);
    // Speech arrived from 0.42 s to 0.82 s on the wall clock, and that is where the turn is; counted
    // from the burst's first frame it would have been half a second later.
    const ms = (seconds: number) => Math.round(seconds * 1000);
    expect(
      s.turns.map(({ startAt, endAt, speechEndWall }) => [ms(startAt), ms(endAt), Math.round(speechEndWall - T0)]),
    ).toEqual([[420, 820, 820]]);
  });

  it('starts speech sent before the call connected (one burst after it) with the call, never at a negative time', async () => {
    const s = setup({ heard: ['hello'] });
    await s.caller.open();
    s.timers.advance(20);
    for (let i = 0; i < 25; i++) s.caller.audio(frame(SPEECH, 16000)); // half a second of speech at once
    await settle();
    await s.feed(300, SPEECH);
    await s.feed(1000, 0);
    expect(s.turns.map(({ startAt, endAt }) => [startAt, Math.round(endAt * 1000)])).toEqual([[0, 320]]);
  });

  it('places each caller frame in the recording at its time on the inbound clock', async () => {
    const s = setup();
    await s.caller.open();
    await s.feed(60, 0);
    expect(s.recorded).toEqual([0, 20, 40]);
  });

  it('closes engines that finish opening after the call stopped', async () => {
    let closed = 0;
    class ClosingVad extends EnergyVad {
      override close(): void {
        closed++;
      }
    }
    const s = setup({ vad: new ClosingVad() });
    const opening = s.caller.open();
    s.caller.stop();
    await opening;
    expect(closed).toBe(1);
  });

  it('hears a caller who spoke while the engines were still opening, at the time they spoke', async () => {
    const s = setupOpeningLate({ heard: ['hello are you there'] });
    await s.feed(400, 0);
    await s.feed(800, SPEECH);
    await s.feed(300, 0);
    await s.opened();
    await s.feed(1000, 0);
    expect(s.turns.map(({ text, startAt, endAt }) => [text, startAt, endAt])).toEqual([
      ['hello are you there', 0.4, 1.2],
    ]);
    // The recogniser heard the words themselves: the onset and the speech, judged by the VAD as it caught up.
    expect(s.stt.pushedAtFinalize[0]).toBeGreaterThanOrEqual((0.3 + 0.8) * 16000);
  });

  it('hears speech over the greeting while the recogniser is still opening: the agent stops at the threshold, and the turn is read from the held audio once it opens', async () => {
    let release!: () => void;
    const s = setup({ heard: ['sorry, who is this'], sttOpens: new Promise<void>((resolve) => (release = resolve)) });
    const opening = s.caller.open();
    s.state.agentBusy = true; // the greeting plays
    await s.feed(400, 0);
    await s.feed(1000, SPEECH);
    expect(s.log).toEqual(['speechStarted', 'interruption']);
    s.state.agentBusy = false;
    await s.feed(1500, 0);
    // The turn has ended but cannot be read yet.
    expect(s.turns).toEqual([]);
    release();
    await opening;
    await settle();
    expect(s.turns.map(({ text, startAt, endAt }) => [text, startAt, endAt])).toEqual([
      ['sorry, who is this', 0.4, 1.4],
    ]);
    // It heard the onset and the speech, held while it opened.
    expect(s.stt.pushedAtFinalize[0]).toBeGreaterThanOrEqual(1.0 * 16000);
  });

  it('a caller who hangs up while the recogniser is still opening has their last words read once it opens', async () => {
    let release!: () => void;
    const s = setup({ heard: ['no thank you'], sttOpens: new Promise<void>((resolve) => (release = resolve)) });
    const opening = s.caller.open();
    await s.feed(400, 0);
    await s.feed(800, SPEECH);
    await s.feed(300, 0); // paused, not yet at the end of the turn: the caller hangs up
    const lastWords = s.caller.lastWords(3_000);
    release();
    await opening;
    await lastWords;
    expect(s.turns.map(({ text }) => text)).toEqual(['no thank you']);
  });

  it('a hang-up right after the caller’s words, with the VAD still behind them, keeps them: they are judged first', async () => {
    const s = setupOpeningLate({ heard: ['yes please'] });
    await s.feed(400, 0);
    await s.feed(800, SPEECH); // held: the VAD catches up with it after it opens
    await s.opened();
    await s.caller.lastWords(3_000);
    expect(s.turns.map(({ text }) => text)).toEqual(['yes please']);
  });

  it('a recogniser that cannot open, with none to move to, fails the opening even when it fails before the VAD opens', async () => {
    const s = setupOpeningLate({ refuseFirstOpen: true });
    await settle(); // refused while the VAD is still opening
    await s.opened().then(
      () => expect.unreachable('the opening should fail'),
      (error: unknown) => expect(String(error)).toMatch(/connection refused/),
    );
  });

  it('keeps two phrases said while the engines opened apart: two turns, each read from its own audio', async () => {
    const s = setupOpeningLate({ heard: ['hello', 'is anyone there'] });
    await s.feed(400, 0);
    await s.feed(600, SPEECH);
    await s.feed(1000, 0);
    await s.feed(800, SPEECH);
    await s.feed(400, 0);
    await s.opened();
    await s.feed(1000, 0);
    expect(s.turns.map(({ startAt, endAt }) => [startAt, endAt])).toEqual([
      [0.4, 1],
      [2, 2.8],
    ]);
    const [first, second] = s.stt.pushedAtFinalize;
    // Each turn's audio: its onset and speech, and the quiet the VAD judged before ending it.
    expect(first).toBeLessThan((0.3 + 0.6 + 1.0) * 16000);
    expect(second! - first!).toBeGreaterThanOrEqual((0.3 + 0.8) * 16000);
  });

  it('ends a turn said while the engines opened only on silence the VAD has judged: a short pause in it is no end of turn', async () => {
    const s = setupOpeningLate({ heard: ['for appointments press one for billing press two'] });
    // A phone menu read out in one breath, a 300 ms pause between its options, long before the engines open.
    await s.feed(400, 0);
    await s.feed(1200, SPEECH);
    await s.feed(300, 0);
    await s.feed(1000, SPEECH);
    await s.feed(3000, 0);
    await s.opened();
    await s.feed(1000, 0);
    expect(s.turns.map(({ text, startAt, endAt }) => [text, startAt, endAt])).toEqual([
      ['for appointments press one for billing press two', 0.4, 2.9],
    ]);
  });

  it('keeps VAD times on the call clock when the engines opened after more audio than it holds for them (30 s)', async () => {
    const s = setupOpeningLate({ heard: ['late words'] });
    await s.feed(32_000, 0);
    await s.opened();
    await s.feed(1000, 0);
    await s.feed(800, SPEECH);
    await s.feed(1000, 0);
    expect(s.turns.map(({ startAt, endAt }) => [startAt, endAt])).toEqual([[33, 33.8]]);
  });
  it('with noise suppression, the VAD and the recogniser hear the denoised audio while the recording keeps it as it came', async () => {
    const heardByVad: Int16Array[] = [];
    class ListeningVad extends EnergyVad {
      override async push(samples: Int16Array) {
        heardByVad.push(samples.slice());
        return super.push(samples);
      }
    }
    const s = setup({ rate: 8000, vad: new ListeningVad(8000), noiseSuppression: 'rnnoise' });
    await s.caller.open();
    // A second of steady hiss, 20 ms at a time.
    let seed = 1;
    for (let n = 0; n < 50; n++) {
      const hiss = new Int16Array(160);
      for (let i = 0; i < hiss.length; i++)
        hiss[i] = Math.round((((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648) * 2 - 1) * 1500);
      s.timers.advance(20);
      await settle();
      s.caller.audio(hiss);
      await settle();
    }
    const level = (frames: Int16Array[]) =>
      Math.sqrt(
        frames.slice(25).reduce((sum, f) => sum + f.reduce((a, x) => a + x * x, 0) / f.length, 0) /
          (frames.length - 25),
      );
    expect(heardByVad).toHaveLength(50);
    expect(s.recordedAudio).toHaveLength(50);
    // The last half second: RNNoise has learned the hiss and takes it out for the listeners, not the recording.
    expect(level(s.recordedAudio)).toBeGreaterThan(700);
    expect(level(heardByVad)).toBeLessThan(level(s.recordedAudio) / 3);
    // Listeners to the line's frames (the beep detector) hear them as they came, too.
    expect(s.heard.map((j) => j.frame)).toEqual(s.recordedAudio);
    s.caller.close();
  });

  it("hands each frame on as it arrives, and says how far the VAD has judged only once it has, after that audio's speech start", async () => {
    const s = setupOpeningLate({ heard: ['hello'] });
    await s.feed(400, 0);
    await s.feed(600, SPEECH);
    // Wall time went on a second: every frame was heard at its time on the inbound clock, none judged yet.
    expect(s.heard.map((h) => Math.round(h.at * 1000))).toEqual(Array.from({ length: 50 }, (_, i) => i * 20));
    expect(s.judged).toEqual([]);
    await s.opened();
    await s.feed(400, 0);
    // Each frame's end, in order, once the VAD judged it.
    expect(s.judged.map((j) => Math.round(j.at * 1000))).toEqual(Array.from({ length: 70 }, (_, i) => (i + 1) * 20));
    expect(s.starts).toEqual([0.4]);
    // The first loud frame (0.40-0.42 s) is judged after the start the VAD found in it, the quiet before without one.
    const loud = s.judged.findIndex((j) => Math.abs(j.at - 0.42) < 1e-9);
    expect(s.judged[loud]!.startsBefore).toBe(1);
    expect(s.judged[loud - 1]!.startsBefore).toBe(0);
  });
});
