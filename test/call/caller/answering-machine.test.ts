import { afterAll, describe, expect, it } from 'vitest';
import {
  AnsweringMachineDetector,
  soundsLikeMachine,
  type Answerer,
} from '../../../src/call/caller/answering-machine.ts';
import { MoonshineEngine } from '../../../src/speech/stt/moonshine/engine.ts';
import { SileroVadEngine } from '../../../src/speech/vad/silero.ts';
import { detect, machineGreetingSet, type Detection } from '../../support/machine-greetings.ts';

const FRAME = new Int16Array(160);

/** A detector fed silence frames to `untilMs`, with the speech stretches and words given. */
function run(script: {
  speech?: [number, number][];
  words?: [string, number][];
  untilMs: number;
  timeoutMs?: number;
}): Answerer | null {
  let decided: Answerer | null = null;
  const d = new AnsweringMachineDetector(8000, script.timeoutMs ?? 30_000, {
    decided: (a) => (decided ??= a),
    beep: () => undefined,
  });
  for (let at = 0; at < script.untilMs; at += 20) {
    for (const [start, end] of script.speech ?? []) {
      if (start === at) d.speechStarted(at);
      if (end === at) d.speechEnded(at);
    }
    for (const [text, when] of script.words ?? []) if (when === at) d.words(text, at);
    d.audio(FRAME, at);
    d.judged(at);
  }
  return decided;
}

describe('AnsweringMachineDetector', () => {
  it('knows a machine by the words of recorded greetings, not by what people say', () => {
    for (const greeting of [
      'Please leave a message after the tone.',
      'The person you are calling is not available.',
      "I can't take your call right now",
      'You have reached the voicemail box of Sam.',
      'Leave your name and number.',
      'Sorry, I missed your call.',
    ]) {
      expect(soundsLikeMachine(greeting), greeting).toBe(true);
    }
    for (const person of [
      'Hello?',
      'Yeah, who is this?',
      'Hi, this is John speaking.',
      'Can I take a message for her?',
      'Sorry, could you repeat that?',
    ]) {
      expect(soundsLikeMachine(person), person).toBe(false);
    }
  });

  it('decides machine on 3.5 s of speech without a pause for an answer, counting short pauses as part of it', () => {
    expect(
      run({
        speech: [
          [300, 1500],
          [2000, 6000],
        ],
        untilMs: 7000,
      }),
    ).toEqual({ by: 'machine', evidence: 'long_greeting', atMs: 3800 });
  });

  it('decides human 1.5 s after a short first answer, and for silence until the timeout', () => {
    expect(run({ speech: [[300, 900]], untilMs: 5000 })).toEqual({ by: 'human', atMs: 2400 });
    expect(run({ untilMs: 4000, timeoutMs: 3000 })).toEqual({ by: 'human', atMs: 3000 });
  });

  it('decides by the words when they come, even of a short greeting, and never changes its mind', () => {
    expect(
      run({
        speech: [[300, 1300]],
        words: [
          ['Leave a message.', 1400],
          ['', 3000],
        ],
        untilMs: 5000,
      }),
    ).toEqual({ by: 'machine', evidence: 'words', atMs: 1400 });
    expect(run({ speech: [[300, 900]], words: [['leave a message', 3000]], untilMs: 5000 })).toEqual({
      by: 'human',
      atMs: 2400,
    });
  });
});

describe('the answering-machine detection set (real VAD and recogniser on the phone path)', () => {
  const vad = new SileroVadEngine();
  const stt = new MoonshineEngine({ workers: 1 });
  afterAll(async () => {
    await vad.close();
    await stt.close();
  });

  it('tells at least 95% of its 37 greetings right (20 machines, 17 people), machines within 3 s of their greeting (median)', async () => {
    // The workers load the model on a first open; transcribe() alone waits for one that is ready.
    await (await stt.open({ sampleRate: 8000, language: 'en-US' })).close();
    const started = performance.now();
    const set = await machineGreetingSet();
    expect(set.filter((g) => g.truth === 'machine')).toHaveLength(20);
    expect(set.filter((g) => g.truth === 'human')).toHaveLength(17);
    const results: Detection[] = [];
    for (const greeting of set) results.push(await detect(greeting, { vad, stt }));
    const wrong = results.filter((r) => (r.answerer?.by ?? 'none') !== r.greeting.truth);
    const accuracy = 1 - wrong.length / results.length;
    const machineTimes = results
      .filter((r) => r.greeting.truth === 'machine' && r.answerer?.by === 'machine')
      .map((r) => r.afterGreetingMs!)
      .sort((a, b) => a - b);
    const median = machineTimes[Math.floor(machineTimes.length / 2)]!;
    process.stdout.write(
      `\n[amd set] ${results.length} greetings, accuracy ${(accuracy * 100).toFixed(1)}%, machine decision median ${Math.round(median)} ms after the greeting (${Math.round(performance.now() - started)} ms to run); wrong: ${JSON.stringify(wrong.map((w) => `${w.greeting.name} → ${w.answerer?.by ?? 'none'}`))}\n`,
    );
    expect(accuracy).toBeGreaterThanOrEqual(0.95);
    expect(median).toBeLessThanOrEqual(3_000);
  }, 120_000);
});
