import { describe, expect, it } from 'vitest';
import { AgentConfigSchema } from '../../src/agents/schema.ts';
import { interruptionThresholdMs } from '../../src/call/caller/caller-input.ts';
import { VOICEMAIL_DROP_DEFAULTS } from '../../src/call/caller/voicemail-drop.ts';
import { CallSession, SESSION_DEFAULTS, type SessionOptions, type SessionResult } from '../../src/call/session.ts';
import { ManualTimers } from '../../src/timers.ts';
import type { TurnLatency } from '../../src/records/events.ts';
import { LlmError } from '../../src/llm/errors.ts';
import type { DisconnectionReason } from '../../src/records/record.ts';
import {
  EnergyVad,
  FailingVad,
  FakeTransport,
  SPEECH,
  ScriptedBrain,
  ScriptedStt,
  WordTts,
  engines,
  frame,
  say,
  settle,
  silentLog,
  type BrainStep,
} from '../helpers/session-fakes.ts';

const agentConfig = (overrides: Record<string, unknown> = {}) =>
  AgentConfigSchema.parse({
    agent_name: 'Test',
    llm: { base_url: 'http://127.0.0.1:9/v1', model: 'm' },
    begin_message: 'Hello there.',
    ...overrides,
  });

function setup(
  options: {
    agent?: Record<string, unknown>;
    heard?: string[];
    steps?: BrainStep[];
    fallback?: BrainStep;
    guard?: (ms: number) => Promise<DisconnectionReason | null>;
    /** The line's rate (a phone line: 8000). */
    rate?: 8000 | 16000;
    vad?: EnergyVad;
    onTurnLatency?: (parts: TurnLatency) => void;
    onTranscript?: SessionOptions['onTranscript'];
    voicemail?: SessionOptions['voicemail'];
    transfer?: SessionOptions['transfer'];
    /** The recogniser, when the test drives it (else a ScriptedStt reading `heard`). */
    stt?: ScriptedStt;
  } = {},
) {
  const rate = options.rate ?? 16000;
  const timers = new ManualTimers(1_700_000_000_000);
  const transport = new FakeTransport(timers, rate);
  const stt = options.stt ?? new ScriptedStt(options.heard ?? []);
  const tts = new WordTts();
  const brain = new ScriptedBrain(options.steps ?? [], options.fallback);
  let result: SessionResult | undefined;
  const session = new CallSession({
    callId: 'call_test',
    agent: agentConfig(options.agent),
    systemPrompt: 'You are a test.',
    transport,
    timers,
    engines: engines(stt, tts, options.vad ?? new EnergyVad(rate)),
    brain,
    log: silentLog,
    ...(options.guard ? { guard: options.guard } : {}),
    onTurnLatency: options.onTurnLatency,
    onTranscript: options.onTranscript,
    voicemail: options.voicemail,
    transfer: options.transfer,
    onEnd: (r) => (result = r),
  });
  /** Feeds `ms` of caller audio (speech or silence) frame by frame in fake real time. */
  const feed = async (ms: number, amplitude: number) => {
    await settle();
    // A frame arrives once its 20 ms have been captured, as on a real line.
    for (let t = 0; t < ms; t += 20) {
      timers.advance(20);
      await settle();
      transport.handlers.audio(frame(amplitude, rate));
      await settle();
    }
  };
  /** Lets time pass with no inbound audio. */
  const wait = async (ms: number, step = 20) => {
    await settle();
    for (let t = 0; t < ms; t += step) {
      timers.advance(Math.min(step, ms - t));
      await settle();
    }
  };
  /** The greeting, 0.8 s of caller speech at 1.0 s, 1.5 s of quiet, then the caller hangs up. */
  const oneTurn = async (): Promise<SessionResult> => {
    await session.start();
    await feed(1000, 0);
    await feed(800, SPEECH);
    await feed(1500, 0);
    transport.handlers.hangup();
    await wait(20);
    return result!;
  };
  return { timers, transport, stt, tts, brain, session, feed, wait, oneTurn, result: () => result };
}

const agentMessages = (r: SessionResult) => r.transcript.filter((m) => m.role === 'agent');

function expectOrdered(r: SessionResult) {
  let last = 0;
  for (const item of r.transcriptWithToolCalls) {
    expect(item.start_at).toBeGreaterThanOrEqual(last);
    expect(item.end_at).toBeGreaterThanOrEqual(item.start_at);
    last = item.start_at;
  }
}

// Words of one length, so the played-words estimate (by characters) is exact here.
const LONG = 'alpha bravo charm delta eagle fable giant hotel ivory joker karma lemon mango noble ocean';

describe('CallSession', () => {
  it('speaks the begin message first, timed by playback from the call start', async () => {
    const s = setup();
    await s.session.start();
    await s.wait(1000);
    s.transport.handlers.hangup();
    await s.wait(20);
    const r = s.result()!;
    expect(r.reason).toBe('user_hangup');
    // 2 words × 100 ms of audio, playing from t = 0.
    expect(r.transcript).toEqual([{ role: 'agent', content: 'Hello there.', start_at: 0, end_at: 0.2 }]);
  });

  it('ends user_hangup with the message the line gives when it could only tell the far side was gone', async () => {
    const s = setup();
    await s.session.start();
    s.transport.handlers.hangup('No RTP from the far side for 30 s: the media stopped.');
    await s.wait(20);
    expect(s.result()).toMatchObject({
      reason: 'user_hangup',
      message: 'No RTP from the far side for 30 s: the media stopped.',
    });
  });

  it("hands each answered turn's latency parts to onTurnLatency once: e2e as recorded, the model's timing, the first TTS audio", async () => {
    const turns: TurnLatency[] = [];
    const timed: BrainStep = async (_m, hooks) => {
      hooks.onChunk?.('Nice to meet you.');
      hooks.onLlmTiming?.({ requestSentAt: 1000, firstTokenAt: 1012, firstChunkAt: 1015, endedAt: 1020, attempts: 1 });
      return { kind: 'reply', messages: [{ role: 'assistant', content: 'Nice to meet you.' }] };
    };
    const s = setup({ heard: ['my name is ann'], steps: [timed], onTurnLatency: (p) => turns.push(p) });
    const r = await s.oneTurn();
    expect(turns).toHaveLength(1);
    expect(turns[0]).toMatchObject({ turn: 1, e2e: r.latency!.e2e!.p50, asr: 0, llm: 12, llmSpeakable: 15, tts: 0 });
    // First audio of the answer, on the call's clock: the caller's speech end (1.8 s) plus e2e.
    expect(turns[0]!.at).toBe(1_700_000_000_000 + 1800 + turns[0]!.e2e);
  });

  it('hands every settled message to onTranscript at once (the record keeps it), never one still playing', async () => {
    const snapshots: string[][] = [];
    const s = setup({
      heard: ['my name is ann'],
      steps: [say('Nice to meet you.')],
      onTranscript: (messages) => snapshots.push(messages.map((m) => `${m.role}: ${m.content}`)),
    });
    await s.session.start();
    await s.wait(100);
    expect(snapshots).toEqual([]); // the greeting is still playing
    await s.wait(200);
    expect(snapshots).toEqual([['agent: Hello there.']]);
    await s.feed(700, 0);
    await s.feed(800, SPEECH);
    await s.feed(1500, 0);
    expect(snapshots).toEqual([
      ['agent: Hello there.'],
      ['agent: Hello there.', 'user: my name is ann'],
      ['agent: Hello there.', 'user: my name is ann', 'agent: Nice to meet you.'],
    ]);
  });

  it('waits for the caller when begin_message is empty', async () => {
    const s = setup({ agent: { begin_message: '' } });
    await s.session.start();
    await s.wait(5000);
    expect(s.transport.framesSent).toBe(0);
    s.transport.handlers.hangup();
    await s.wait(20);
    expect(s.result()!.transcript).toEqual([]);
  });

  it('answers a user turn after endpointing_ms of silence, with VAD times and measured latency', async () => {
    const s = setup({ heard: ['my name is ann'], steps: [say('Nice to meet you, Ann.')] });
    const r = await s.oneTurn(); // greeting plays, caller silent; 1.0 s → 1.8 s speech
    expect(r.transcript.map((m) => [m.role, m.content])).toEqual([
      ['agent', 'Hello there.'],
      ['user', 'my name is ann'],
      ['agent', 'Nice to meet you, Ann.'],
    ]);
    const [, user, reply] = r.transcript;
    expect(user).toMatchObject({ start_at: 1, end_at: 1.8 });
    // endpointing 500 ms after speech end, and the zero-latency fakes add nothing.
    expect(reply!.start_at).toBeCloseTo(2.3, 1);
    expect(r.latency?.e2e?.num).toBe(1);
    expect(r.latency!.e2e!.p50).toBeGreaterThanOrEqual(500);
    expect(r.latency!.e2e!.p50).toBeLessThanOrEqual(540);
    expect(s.brain.calls[0]!.at(-1)).toEqual({ role: 'user', content: 'my name is ann' });
    expect(s.stt.pushed).toBeGreaterThan(0.8 * 16000);
    expectOrdered(r);
  });

  it('runs a phone line at its own 8 kHz: the engines take and give its frames as they are, same timestamps', async () => {
    const s = setup({ rate: 8000, heard: ['my name is ann'], steps: [say('Nice to meet you, Ann.')] });
    const r = await s.oneTurn();
    const [greeting, user, reply] = r.transcript;
    expect(greeting).toEqual({ role: 'agent', content: 'Hello there.', start_at: 0, end_at: 0.2 });
    expect(user).toMatchObject({ content: 'my name is ann', start_at: 1, end_at: 1.8 });
    expect(reply!.start_at).toBeCloseTo(2.3, 1);
    // 0.8 s of speech plus the onset and the endpointing wait, at 8000 samples a second.
    expect(s.stt.pushed).toBeGreaterThan(0.8 * 8000);
    expect(s.stt.pushed).toBeLessThan(2 * 8000);
    expect([...s.tts.rates]).toEqual([8000]);
    expect([...s.transport.frameLengths]).toEqual([160]);
    expectOrdered(r);
  });

  it('keeps a pause shorter than endpointing_ms inside one user turn', async () => {
    const s = setup({ heard: ['tomorrow at three'], steps: [say('Booked.')] });
    await s.session.start();
    await s.feed(400, 0);
    await s.feed(400, SPEECH);
    await s.feed(300, 0); // shorter than 500 ms endpointing
    await s.feed(400, SPEECH);
    await s.feed(1200, 0);
    s.transport.handlers.hangup();
    await s.wait(20);
    const users = s.result()!.transcript.filter((m) => m.role === 'user');
    expect(users).toHaveLength(1);
    expect(users[0]).toMatchObject({ start_at: 0.4, end_at: 1.5 });
  });

  it('lets the caller barge in: TTS stops, queued audio is cleared, the agent message keeps only the words played', async () => {
    const s = setup({
      agent: { begin_message: LONG, interruption_sensitivity: 0.5 },
      heard: ['stop please'],
      steps: [say('Sure.')],
    });
    await s.session.start();
    await s.feed(300, 0);
    await s.feed(interruptionThresholdMs(0.5) + 200, SPEECH); // 0.3 s → 1.1 s, interrupts at 0.9 s
    await s.feed(1200, 0);
    s.transport.handlers.hangup();
    await s.wait(20);
    const r = s.result()!;
    expect(s.transport.clears).toBe(1);
    const [cut] = agentMessages(r);
    expect(cut!.end_at).toBeCloseTo(0.3 + interruptionThresholdMs(0.5) / 1000, 1);
    // 100 ms per word: nine words had started playing by 0.9 s.
    expect(cut!.content).toBe('alpha bravo charm delta eagle fable giant hotel ivory');
    expect(s.brain.calls[0]!.find((m) => m.role === 'assistant')).toEqual({ role: 'assistant', content: cut!.content });
    expect(r.transcript.map((m) => m.role)).toEqual(['agent', 'user', 'agent']);
    expectOrdered(r);
  });

  it('after an interruption that was only a backchannel ("uh-huh", okay) goes on from the word where it stopped, without asking the model', async () => {
    const s = setup({ agent: { begin_message: LONG, interruption_sensitivity: 0.5 }, heard: ['Uh-huh, okay.'] });
    await s.session.start();
    await s.feed(300, 0);
    await s.feed(interruptionThresholdMs(0.5) + 200, SPEECH); // interrupts at 0.9 s
    await s.feed(3000, 0);
    s.transport.handlers.hangup();
    await s.wait(20);
    const r = s.result()!;
    expect(s.brain.calls).toHaveLength(0);
    const [cut, resumed] = agentMessages(r);
    expect(cut!.content).toBe('alpha bravo charm delta eagle fable giant hotel ivory');
    expect(`${cut!.content} ${resumed!.content}`).toBe(LONG);
    expect(r.transcript.map((m) => `${m.role}: ${m.content}`)).toEqual([
      `agent: ${cut!.content}`,
      'user: Uh-huh, okay.',
      `agent: ${resumed!.content}`,
    ]);
    expectOrdered(r);
  });

  it('after an interruption whose sound held no words goes on where it stopped; after real words it answers them', async () => {
    const cough = setup({ agent: { begin_message: LONG }, heard: [''] });
    await cough.session.start();
    await cough.feed(300, 0);
    await cough.feed(interruptionThresholdMs(0.5) + 200, SPEECH);
    await cough.feed(3000, 0);
    cough.transport.handlers.hangup();
    await cough.wait(20);
    const heard = agentMessages(cough.result()!).map((m) => m.content);
    expect(heard.join(' ')).toBe(LONG);
    expect(cough.result()!.transcript.filter((m) => m.role === 'user')).toEqual([]);

    const real = setup({
      agent: { begin_message: LONG },
      heard: ['Okay, but when do you open?'],
      steps: [say('At nine.')],
    });
    await real.session.start();
    await real.feed(300, 0);
    await real.feed(interruptionThresholdMs(0.5) + 200, SPEECH);
    await real.feed(3000, 0);
    real.transport.handlers.hangup();
    await real.wait(20);
    expect(
      agentMessages(real.result()!)
        .map((m) => m.content)
        .at(-1),
    ).toBe('At nine.');
    expect(real.brain.calls).toHaveLength(1);
  });

  it('does not interrupt for a backchannel shorter than the threshold, and makes no turn of it', async () => {
    const s = setup({ agent: { begin_message: LONG }, heard: ['uh huh'] });
    await s.session.start();
    await s.feed(300, 0);
    await s.feed(200, SPEECH); // well under 600 ms
    await s.feed(2000, 0);
    s.transport.handlers.hangup();
    await s.wait(20);
    const r = s.result()!;
    expect(s.transport.clears).toBe(0);
    expect(r.transcript).toEqual([{ role: 'agent', content: LONG, start_at: 0, end_at: 1.5 }]);
    expect(s.stt.cancels).toBe(1);
    expect(s.brain.calls).toHaveLength(0);
  });

  it('makes keypad digits a caller turn: gathered to the terminator, the model told "Keypad: …", the transcript marking it keypad', async () => {
    const s = setup({ agent: { begin_message: 'Press your account number, then hash.' }, steps: [say('Thank you.')] });
    await s.session.start();
    await s.wait(3000);
    for (const key of '4279#') {
      s.transport.handlers.dtmf(key);
      await s.wait(200);
    }
    await s.wait(1500);
    s.transport.handlers.hangup();
    await s.wait(20);
    const r = s.result()!;
    expect(s.brain.calls[0]!.at(-1)).toEqual({ role: 'user', content: 'Keypad: 4279' });
    const keyed = r.transcript.find((m) => m.role === 'user')!;
    expect(keyed).toMatchObject({ content: '4279', input: 'keypad', start_at: 3, end_at: 3.8 });
    expect(r.transcript.map((m) => m.content)).toEqual(['Press your account number, then hash.', '4279', 'Thank you.']);
    expectOrdered(r);
  });

  it('stops the agent when a key is pressed while it speaks, as speech does', async () => {
    const s = setup({ agent: { begin_message: LONG, dtmf: { max_digits: 1 } }, steps: [say('Sales, one moment.')] });
    await s.session.start();
    await s.wait(500);
    s.transport.handlers.dtmf('1');
    await s.wait(2000);
    s.transport.handlers.hangup();
    await s.wait(20);
    const r = s.result()!;
    expect(s.transport.clears).toBe(1);
    const [cut] = agentMessages(r);
    expect(cut!.content.split(' ').length).toBeLessThan(LONG.split(' ').length);
    expect(r.transcript.slice(1).map((m) => `${m.role}: ${m.content}`)).toEqual([
      'user: 1',
      'agent: Sales, one moment.',
    ]);
  });

  it('ignores keypad digits when the agent turns dtmf off', async () => {
    const s = setup({ agent: { begin_message: '', dtmf: { enabled: false } } });
    await s.session.start();
    for (const key of '12#') s.transport.handlers.dtmf(key);
    await s.wait(3000);
    s.transport.handlers.hangup();
    await s.wait(20);
    expect(s.brain.calls).toHaveLength(0);
    expect(s.result()!.transcript).toEqual([]);
  });

  it('plays keys the model presses as tones on the line, after what is queued, with no words in the transcript', async () => {
    let pressed: boolean | undefined;
    const press: BrainStep = async (_m, hooks) => {
      pressed = await hooks.pressDigits!('12');
      return { kind: 'reply', messages: [] };
    };
    const s = setup({ agent: { begin_message: '' }, heard: ['press one for sales'], steps: [press] });
    await s.session.start();
    await s.feed(500, 0);
    await s.feed(800, SPEECH);
    const before = s.transport.framesSent;
    await s.feed(2000, 0);
    s.transport.handlers.hangup();
    await s.wait(20);
    expect(pressed).toBe(true);
    // Two keys of 100 ms tone and 100 ms gap: 20 frames of 20 ms.
    expect(s.transport.framesSent - before).toBe(20);
    expect(s.result()!.transcript.map((m) => m.role)).toEqual(['user']);
  });

  it('plays the keys in full while the far side talks over them: a menu reads on as it listens for them', async () => {
    let pressed: boolean | undefined;
    const press: BrainStep = async (_m, hooks) => {
      pressed = await hooks.pressDigits!('123');
      return { kind: 'reply', messages: [] };
    };
    const s = setup({
      agent: { begin_message: '' },
      heard: ['for sales press one', 'for billing press two'],
      steps: [press],
      fallback: say('Sorry?'),
    });
    await s.session.start();
    await s.feed(500, 0);
    await s.feed(800, SPEECH);
    const before = s.transport.framesSent;
    // The answer's keys start in the pause, and the menu reads on over them for longer than any threshold.
    await s.feed(700, 0);
    expect(s.transport.framesSent).toBeGreaterThan(before);
    await s.feed(1200, SPEECH);
    await s.feed(2000, 0);
    s.transport.handlers.hangup();
    await s.wait(20);
    expect(pressed).toBe(true);
    expect(s.transport.clears).toBe(0);
    // Three keys of 100 ms tone and 100 ms gap (30 frames), then "Sorry?" to the menu's next words (5).
    expect(s.transport.framesSent - before).toBe(30 + 5);
  });

  describe('on an outbound call that looks for an answering machine', () => {
    const LEAVE = {
      action: 'leave_message' as const,
      message: 'Hi, this is the clinic. Please call us back.',
      detectTimeoutMs: 30_000,
    };
    /** A 1 kHz beep frame; it starts at a zero crossing, so the energy VAD hears no speech in it. */
    const beepFrame = (n: number, rate: number) =>
      Int16Array.from({ length: rate / 50 }, (_, i) =>
        Math.round(8000 * Math.sin((2 * Math.PI * 1000 * (n * (rate / 50) + i)) / rate)),
      );

    it("knows a machine by its greeting's words, stops talking, and leaves the message once the greeting is over: voicemail_reached", async () => {
      const s = setup({
        voicemail: LEAVE,
        heard: ['Hi, you have reached Sam. Please leave a message after the tone.'],
        steps: [say('Should never be said.')],
      });
      await s.session.start();
      await s.feed(300, 0);
      await s.feed(2000, SPEECH);
      await s.feed(4000, 0);
      await s.wait(6000);
      const r = s.result()!;
      expect(r.reason).toBe('voicemail_reached');
      expect(r.message).toBe(
        'An answering machine answered (found by its greeting words); the voicemail message was left.',
      );
      expect(s.brain.calls).toHaveLength(0);
      // The greeting waited for the machine's pause (as for a person's "Hello?"); its words came after.
      expect(r.transcript.map((m) => `${m.role}: ${m.content}`)).toEqual([
        'user: Hi, you have reached Sam. Please leave a message after the tone.',
        'agent: Hello there.',
        `agent: ${LEAVE.message}`,
      ]);
    });

    it('greets a person as soon as their "Hello?" pauses, not at the start: the model does not answer the hello, and sees it before the greeting', async () => {
      const s = setup({
        agent: { begin_message: 'Hello there.' },
        voicemail: LEAVE,
        heard: ['Hello?', 'my name is ann'],
        steps: [say('Nice to meet you.')],
      });
      await s.session.start();
      await s.feed(300, 0);
      await s.feed(600, SPEECH);
      await s.feed(2000, 0);
      await s.feed(800, SPEECH);
      await s.feed(1500, 0);
      s.transport.handlers.hangup();
      await s.wait(20);
      const r = s.result()!;
      expect(r.reason).toBe('user_hangup');
      expect(r.transcript.map((m) => `${m.role}: ${m.content}`)).toEqual([
        'user: Hello?',
        'agent: Hello there.',
        'user: my name is ann',
        'agent: Nice to meet you.',
      ]);
      const [hello, greeting] = r.transcript;
      expect(hello).toMatchObject({ start_at: 0.3, end_at: 0.9 });
      // At the VAD's pause, before the words are read or the turn is over.
      expect(greeting!.start_at).toBeGreaterThan(0.9);
      expect(greeting!.start_at - 0.9).toBeLessThanOrEqual(0.3);
      expect(s.brain.calls).toHaveLength(1);
      expect(s.brain.calls[0]!.map((m) => `${m.role}: ${String(m.content)}`)).toEqual([
        'system: You are a test.',
        'user: Hello?',
        'assistant: Hello there.',
        'user: my name is ann',
      ]);
    });

    it('answers a callee who talked over the greeting: a greeting cut short answered nothing of what they said', async () => {
      const s = setup({
        agent: { begin_message: LONG },
        voicemail: LEAVE,
        heard: ['For appointments press one.', 'For billing press two.'],
        steps: [say('Pressing one.')],
      });
      await s.session.start();
      await s.feed(300, 0);
      await s.feed(1200, SPEECH);
      await s.feed(400, 0); // the callee's first pause: the agent greets
      await s.feed(1200, SPEECH); // a menu goes on over the greeting
      await s.feed(2500, 0);
      s.transport.handlers.hangup();
      await s.wait(20);
      const r = s.result()!;
      expect(r.reason).toBe('user_hangup');
      // Cut at the interruption threshold (600 ms) after the menu went on at 1.9 s.
      const cut = 'alpha bravo charm delta eagle fable giant hotel';
      expect(r.transcript.map((m) => `${m.role}: ${m.content}`)).toEqual([
        'user: For appointments press one.',
        `agent: ${cut}`,
        'agent: Pressing one.',
      ]);
      expect(r.transcript[1]).toMatchObject({ start_at: 1.7, end_at: 2.5 });
      expect(s.brain.calls.map((call) => call.map((m) => `${m.role}: ${String(m.content)}`))).toEqual([
        ['system: You are a test.', `assistant: ${cut}`, 'user: For appointments press one.'],
      ]);
    });

    it('a callee going on over the greeting for less than the threshold ("uh-huh") lets it go on, and nothing answers the turn', async () => {
      const s = setup({
        agent: { begin_message: LONG },
        voicemail: LEAVE,
        heard: ['Hello? Uh-huh.'],
        steps: [say('Should never be said.')],
      });
      await s.session.start();
      await s.feed(300, 0);
      await s.feed(600, SPEECH);
      await s.feed(400, 0);
      await s.feed(300, SPEECH);
      await s.feed(2500, 0);
      s.transport.handlers.hangup();
      await s.wait(20);
      const r = s.result()!;
      expect(r.transcript.map((m) => `${m.role}: ${m.content}`)).toEqual(['user: Hello? Uh-huh.', `agent: ${LONG}`]);
      expect(s.brain.calls).toHaveLength(0);
    });

    it('greets a callee who says nothing once the answer has been quiet for quietAnswerMs', async () => {
      const s = setup({ agent: { begin_message: 'Hello there.' }, voicemail: LEAVE });
      await s.session.start();
      await s.feed(VOICEMAIL_DROP_DEFAULTS.quietAnswerMs - 100, 0);
      expect(s.tts.spoken).toEqual([]);
      await s.feed(1000, 0);
      s.transport.handlers.hangup();
      await s.wait(20);
      const [greeting] = s.result()!.transcript;
      expect(greeting).toMatchObject({ role: 'agent', content: 'Hello there.' });
      expect(greeting!.start_at).toBeCloseTo(VOICEMAIL_DROP_DEFAULTS.quietAnswerMs / 1000, 1);
    });

    it('a machine talking on over the greeting cuts it at once, and the message is left once its greeting is over', async () => {
      const s = setup({
        agent: { begin_message: `${LONG} ${LONG}` },
        voicemail: LEAVE,
        heard: ['Hi, it is Sam, I cannot take your call.'],
        steps: [say('Should never be said.')],
      });
      await s.session.start();
      await s.feed(300, 0);
      await s.feed(1000, SPEECH);
      await s.feed(400, 0); // the machine's first pause: the agent greets it
      await s.feed(3000, SPEECH); // its greeting goes on: 3.5 s of it without a pause for an answer
      await s.feed(3000, 0);
      await s.wait(3000);
      const r = s.result()!;
      expect(r.reason).toBe('voicemail_reached');
      expect(r.message).toMatch(/found by its long greeting/);
      expect(s.transport.clears).toBeGreaterThanOrEqual(1);
      expect(s.brain.calls).toHaveLength(0);
      const agents = agentMessages(r);
      expect(agents).toHaveLength(2);
      // Cut at the interruption threshold (600 ms) after the machine went on at 1.7 s, as a person's words would,
      // before the machine was known: it is never answered.
      expect(agents[0]!.content.length).toBeLessThan(LONG.length);
      expect(agents[0]!.end_at).toBeCloseTo(2.3, 1);
      expect(agents[1]).toMatchObject({ content: LEAVE.message });
      expect(agents[1]!.start_at).toBeGreaterThan(4.7);
    });

    it('knows a machine by its beep and leaves the message right after it', async () => {
      const s = setup({ agent: { begin_message: '' }, voicemail: LEAVE });
      await s.session.start();
      await s.feed(500, 0);
      for (let n = 0; n < 25; n++) {
        s.timers.advance(20);
        s.transport.handlers.audio(beepFrame(n, 16000));
      }
      const beepEnd = s.timers.now();
      await s.feed(5000, 0);
      await s.wait(1000);
      const r = s.result()!;
      expect(r.reason).toBe('voicemail_reached');
      expect(r.message).toMatch(/found by its beep/);
      const message = r.transcript.at(-1)!;
      expect(message.content).toBe(LEAVE.message);
      // Said at once: within a frame or two of the beep's end.
      expect(message.start_at * 1000 - (beepEnd - r.startTimestamp)).toBeLessThanOrEqual(100);
    });

    it('a machine known after the greeting began (its beep) cuts it at once, and the message is left right after', async () => {
      const s = setup({
        agent: { begin_message: `${LONG} ${LONG}` },
        voicemail: LEAVE,
        heard: ['Sam here.'],
        steps: [say('Should never be said.')],
      });
      await s.session.start();
      await s.feed(300, 0);
      await s.feed(1000, SPEECH);
      await s.feed(600, 0); // its pause: the agent greets it
      for (let n = 0; n < 25; n++) {
        s.timers.advance(20);
        s.transport.handlers.audio(beepFrame(n, 16000));
      }
      const beepEnd = s.timers.now();
      await s.feed(3000, 0);
      await s.wait(1000);
      const r = s.result()!;
      expect(r.reason).toBe('voicemail_reached');
      expect(r.message).toMatch(/found by its beep/);
      expect(s.brain.calls).toHaveLength(0);
      const [greeting, message] = agentMessages(r);
      expect(greeting!.content.length).toBeLessThan(LONG.length);
      expect(greeting!.end_at * 1000).toBeLessThanOrEqual(beepEnd - r.startTimestamp + 40);
      expect(message).toMatchObject({ content: LEAVE.message });
      expect(message!.start_at * 1000 - (beepEnd - r.startTimestamp)).toBeLessThanOrEqual(100);
    });

    it('knows a machine by a long greeting without a pause, and hangs up at once when told to', async () => {
      const s = setup({ voicemail: { action: 'hangup', message: null, detectTimeoutMs: 30_000 }, heard: ['blah'] });
      await s.session.start();
      await s.feed(200, 0);
      await s.feed(3600, SPEECH);
      const r = s.result()!;
      expect(r.reason).toBe('voicemail_reached');
      expect(r.message).toBe('An answering machine answered (found by its long greeting); no message was left.');
    });

    it("times silences on the VAD's clock and hears the beep as it comes: a greeting's breath is no person's hello, however far the VAD runs behind", async () => {
      /** A VAD taking two frames' time over each frame, as on a loaded machine: it falls ever further behind. */
      class SlowVad extends EnergyVad {
        timers: ManualTimers | null = null;
        override async push(samples: Int16Array) {
          const events = await super.push(samples);
          await new Promise<void>((resolve) => this.timers!.setTimeout(resolve, 30));
          return events;
        }
      }
      const vad = new SlowVad(16000);
      const s = setup({ agent: { begin_message: '' }, voicemail: LEAVE, vad, heard: ['Hi, this is Sam.', 'Sam.'] });
      vad.timers = s.timers;
      await s.session.start();
      // 1 s of greeting, a 0.5 s breath, 2 s more, then the beep. The VAD reports the breath 1.7 s after the greeting
      // began, by the line's clock, and the greeting going on only 2.1 s later: a detector that measured the silence
      // by the line's clock took it for a person who said hello and waited. The beep is heard as it comes: the VAD has
      // not yet judged the greeting's end by then, and does not need to.
      await s.feed(300, 0);
      await s.feed(1000, SPEECH);
      await s.feed(500, 0);
      await s.feed(2000, SPEECH);
      await s.feed(400, 0);
      for (let n = 0; n < 25; n++) {
        s.timers.advance(20);
        s.transport.handlers.audio(beepFrame(n, 16000));
        await settle();
      }
      const beepEnd = 0.3 + 1 + 0.5 + 2 + 0.4 + 0.5;
      await s.feed(6000, 0);
      await s.wait(3000);
      const r = s.result()!;
      expect(r.reason).toBe('voicemail_reached');
      expect(r.message).toBe('An answering machine answered (found by its beep); the voicemail message was left.');
      const message = r.transcript.at(-1)!;
      expect(message.content).toBe(LEAVE.message);
      // Left right after the beep, not when the lagging VAD got there.
      expect(message.start_at).toBeGreaterThanOrEqual(beepEnd - 0.02);
      expect(message.start_at).toBeLessThanOrEqual(beepEnd + 0.1);
    });

    it('talks to a person who says hello exactly as without detection: the same reply at the same moment', async () => {
      const run = async (voicemail: typeof LEAVE | undefined) => {
        const s = setup({
          agent: { begin_message: '' },
          voicemail,
          heard: ['Hello?'],
          steps: [say('Hi! This is the clinic.')],
        });
        await s.session.start();
        await s.feed(300, 0);
        await s.feed(600, SPEECH);
        await s.feed(3000, 0);
        s.transport.handlers.hangup();
        await s.wait(20);
        return s.result()!;
      };
      const [detected, plain] = [await run(LEAVE), await run(undefined)];
      expect(detected.reason).toBe('user_hangup');
      expect(detected.transcript).toEqual(plain.transcript);
      expect(detected.transcript.map((m) => m.content)).toEqual(['Hello?', 'Hi! This is the clinic.']);
    });
  });

  it('ends at once with user_hangup when the caller hangs up mid-sentence, keeping the words heard', async () => {
    const s = setup({ agent: { begin_message: LONG } });
    await s.session.start();
    await s.feed(500, 0);
    const hungUpAt = s.timers.now();
    s.transport.handlers.hangup();
    await s.wait(20);
    const r = s.result()!;
    expect(r.reason).toBe('user_hangup');
    expect(r.endTimestamp).toBe(hungUpAt);
    expect(r.transcript).toEqual([
      { role: 'agent', content: 'alpha bravo charm delta eagle', start_at: 0, end_at: 0.5 },
    ]);
  });

  describe("a caller's last words before hanging up", () => {
    /** A recogniser whose final text comes only when the test releases it. */
    class HeldStt extends ScriptedStt {
      release: (() => void) | null = null;
      override async finalize() {
        await new Promise<void>((resolve) => (this.release = resolve));
        return super.finalize();
      }
    }
    /** The greeting, then `speechMs` of the caller's words 1 s in and `quietMs` of quiet, then the hang-up. */
    const hangUpAfter = async (s: ReturnType<typeof setup>, speechMs: number, quietMs: number) => {
      await s.session.start();
      await s.feed(1000, 0);
      await s.feed(speechMs, SPEECH);
      if (quietMs) await s.feed(quietMs, 0);
      const at = s.timers.now();
      s.transport.handlers.hangup();
      return at;
    };

    it.each([
      ['while still speaking', 0],
      ['in the pause before the end of their turn', 200],
    ])('are kept in the transcript, never answered, when the caller hangs up %s', async (_when, quietMs) => {
      const s = setup({ heard: ['thanks, bye'], fallback: say('You are welcome.') });
      const hungUpAt = await hangUpAfter(s, 800, quietMs);
      await s.wait(20);
      const r = s.result()!;
      expect(r.reason).toBe('user_hangup');
      expect(r.endTimestamp).toBe(hungUpAt);
      expect(r.transcript.map((m) => `${m.role}: ${m.content}`)).toEqual(['agent: Hello there.', 'user: thanks, bye']);
      expect(r.transcript[1]!.start_at).toBeCloseTo(1.0, 1);
      expect(r.transcript[1]!.end_at).toBeGreaterThan(1.7);
      expect(r.transcript[1]!.end_at).toBeLessThanOrEqual((hungUpAt - r.startTimestamp) / 1000);
      expect(s.brain.calls).toHaveLength(0);
    });

    it('wait for a reading under way, and the call still ends when the caller hung up', async () => {
      const stt = new HeldStt(['see you']);
      const s = setup({ stt });
      const hungUpAt = await hangUpAfter(s, 800, 100);
      await s.wait(500);
      expect(s.result()).toBeUndefined();
      stt.release!();
      await s.wait(20);
      const r = s.result()!;
      expect(r.endTimestamp).toBe(hungUpAt);
      expect(r.transcript.at(-1)).toMatchObject({ role: 'user', content: 'see you' });
    });

    it(`are given up after ${SESSION_DEFAULTS.callerLastWordsMs} ms when the recogniser gives nothing`, async () => {
      const s = setup({ stt: new HeldStt(['lost']) });
      const hungUpAt = await hangUpAfter(s, 800, 100);
      await s.wait(SESSION_DEFAULTS.callerLastWordsMs - 100, 100);
      expect(s.result()).toBeUndefined();
      await s.wait(200, 100);
      const r = s.result()!;
      expect(r.reason).toBe('user_hangup');
      expect(r.endTimestamp).toBe(hungUpAt);
      expect(r.transcript.map((m) => m.role)).toEqual(['agent']);
    });
  });

  it('ends with agent_hangup only after the goodbye has played', async () => {
    const goodbye: BrainStep = async (_m, hooks) => {
      hooks.onChunk?.('Goodbye and thank you.');
      const spoken = await hooks.confirmSpoken('Goodbye and thank you.');
      expect(spoken).toBe(true);
      return {
        kind: 'end_call',
        call: { id: 'c1', name: 'end_call', arguments: '{}' },
        messages: [{ role: 'assistant', content: 'Goodbye and thank you.' }],
      };
    };
    const s = setup({ heard: ['bye'], steps: [goodbye] });
    await s.session.start();
    await s.feed(400, 0);
    await s.feed(400, SPEECH);
    await s.feed(2000, 0);
    const r = s.result()!;
    expect(r.reason).toBe('agent_hangup');
    const last = agentMessages(r).at(-1)!;
    expect(last.content).toBe('Goodbye and thank you.');
    expect(r.endTimestamp - r.startTimestamp).toBeGreaterThanOrEqual(last.end_at * 1000);
    expect(s.transport.closedWith).toBe('agent_hangup');
  });

  it('reminds once after inactivity_timeout_ms of silence, then ends with inactivity', async () => {
    const s = setup({ agent: { inactivity_timeout_ms: 10_000 } });
    await s.session.start();
    await s.wait(30_000);
    const r = s.result()!;
    expect(r.reason).toBe('inactivity');
    expect(agentMessages(r).map((m) => m.content)).toEqual(['Hello there.', 'Are you still there?']);
    // Greeting ends at 0.2 s; the reminder 10 s later (4 words: 0.4 s); the end 10 s after that.
    expect(agentMessages(r)[1]!.start_at).toBeCloseTo(10.2, 1);
    expect(r.endTimestamp - r.startTimestamp).toBeGreaterThanOrEqual(20_600);
    expect(r.endTimestamp - r.startTimestamp).toBeLessThanOrEqual(20_800);
  });

  it('gives reminder_max_count reminders of its reminder_message, reminder_trigger_ms apart, then ends with inactivity', async () => {
    const s = setup({
      agent: {
        inactivity_timeout_ms: 30_000,
        reminder_trigger_ms: 5_000,
        reminder_max_count: 2,
        reminder_message: 'Hello? Anyone there?',
      },
    });
    await s.session.start();
    await s.wait(20_000);
    const r = s.result()!;
    expect(r.reason).toBe('inactivity');
    const agent = agentMessages(r);
    expect(agent.map((m) => m.content)).toEqual(['Hello there.', 'Hello? Anyone there?', 'Hello? Anyone there?']);
    // Greeting ends at 0.2 s; each reminder (3 words: 0.3 s) 5 s after the quiet began; the end 5 s after the last.
    expect(agent[1]!.start_at).toBeCloseTo(5.2, 1);
    expect(agent[2]!.start_at).toBeCloseTo(10.5, 1);
    expect(r.endTimestamp - r.startTimestamp).toBeGreaterThanOrEqual(15_800);
    expect(r.endTimestamp - r.startTimestamp).toBeLessThanOrEqual(16_000);
  });

  it('with reminder_from_model asks the model, told how long the caller was silent, and says its line; a model that fails gets the fixed line said instead', async () => {
    const notes: string[] = [];
    const write: BrainStep = async (messages, hooks) => {
      notes.push(String(messages.at(-1)?.content));
      hooks.onChunk?.('Still with me?');
      return { kind: 'reply', messages: [{ role: 'assistant', content: 'Still with me?' }] };
    };
    const fail: BrainStep = async () => ({
      kind: 'llm_error',
      error: new LlmError('LLM_HTTP_STATUS', 'HTTP 503', { status: 503 }),
      messages: [],
    });
    const s = setup({
      agent: { reminder_trigger_ms: 4_000, reminder_max_count: 2, reminder_from_model: true },
      steps: [write, fail],
    });
    await s.session.start();
    await s.wait(15_000);
    const r = s.result()!;
    expect(notes).toEqual([
      'The caller has said nothing for 4 seconds. Say one short sentence to check whether they are still there.',
    ]);
    expect(agentMessages(r).map((m) => m.content)).toEqual(['Hello there.', 'Still with me?', 'Are you still there?']);
    expect(r.reason).toBe('inactivity');
  });

  it('resets the inactivity timer when the caller speaks', async () => {
    const s = setup({ agent: { inactivity_timeout_ms: 5_000 }, heard: ['still here'], steps: [say('Good.')] });
    await s.session.start();
    await s.wait(4000, 100);
    await s.feed(400, SPEECH);
    await s.feed(600, 0);
    await s.wait(4000, 100);
    expect(s.result()).toBeUndefined();
    await s.wait(20_000, 100);
    expect(s.result()!.reason).toBe('inactivity');
  });

  it('apologises, then ends with error_service when the model fails; the record gives the HTTP status, never the server’s words', async () => {
    const failing: BrainStep = async () => ({
      kind: 'llm_error',
      error: new LlmError('LLM_HTTP_STATUS', 'HTTP 503: internal host db-7 is down', { status: 503 }),
      messages: [],
    });
    const s = setup({ heard: ['hello'], steps: [failing] });
    await s.session.start();
    await s.feed(400, 0);
    await s.feed(400, SPEECH);
    await s.feed(3000, 0);
    await s.wait(5000);
    const r = s.result()!;
    expect(r.reason).toBe('error_service');
    expect(agentMessages(r).at(-1)!.content).toMatch(/sorry/i);
    expect(r.message).toBe('The language model failed: model server answered with an error status (HTTP 503).');
  });

  it('ends with flow_error when the model output makes the call impossible', async () => {
    const broken: BrainStep = async () => ({
      kind: 'flow_error',
      code: 'UNKNOWN_TOOL',
      detail: 'no tool named fly',
      messages: [],
    });
    const s = setup({ heard: ['hello'], steps: [broken] });
    await s.session.start();
    await s.feed(400, 0);
    await s.feed(400, SPEECH);
    await s.feed(600, 0);
    await s.wait(5000);
    expect(s.result()).toMatchObject({ reason: 'flow_error', message: 'UNKNOWN_TOOL: no tool named fly' });
  });

  it('a recogniser that crashes costs one turn, never the call: the agent asks again and answers the next turn', async () => {
    const s = setup({
      heard: ['my name is ann'],
      steps: [say('Nice to meet you.')],
    });
    s.stt.failNext = true;
    await s.session.start();
    await s.feed(400, 0);
    await s.feed(400, SPEECH);
    await s.feed(600, 0);
    await s.wait(3000);
    expect(s.result()).toBeUndefined();
    expect(s.tts.spoken).toContain(SESSION_DEFAULTS.unheardText);
    s.stt.failNext = false;
    await s.feed(400, SPEECH);
    await s.feed(600, 0);
    await s.wait(3000);
    expect(s.tts.spoken).toContain('Nice to meet you.');
    expect(s.result()).toBeUndefined();
  });

  it('apologises, then ends with error_service when voice activity detection fails, and feeds it no more', async () => {
    const vad = new FailingVad(10);
    const s = setup({ agent: { begin_message: '' }, vad });
    await s.session.start();
    await s.feed(1000, 0);
    await s.wait(8000);
    const r = s.result()!;
    expect(r).toMatchObject({ reason: 'error_service', message: 'Voice activity detection failed.' });
    expect(agentMessages(r).at(-1)!.content).toMatch(/sorry/i);
    expect(vad.pushes).toBe(10);
  });

  describe('with a carrier that transfers', () => {
    const transferStep: BrainStep = async (_m, hooks) => {
      hooks.onChunk?.('Let me put you through.');
      await hooks.confirmSpoken('Let me put you through.');
      return {
        kind: 'transfer_call',
        call: { id: 't', name: 'transfer_call', arguments: '{}' },
        transferTo: '+14155550123',
        messages: [{ role: 'assistant', content: 'Let me put you through.' }],
      };
    };
    /** The caller asks at 0.4 s; the reply plays; the carrier is asked to transfer once it has. */
    async function transferring(
      options: { carrier?: (to: string) => Promise<void>; steps?: BrainStep[]; message?: string } = {},
    ) {
      const asked: { to: string; at: number }[] = [];
      const s = setup({
        agent: {
          begin_message: '',
          tools: [
            {
              type: 'transfer_call',
              transfer_to: '+14155550123',
              ...(options.message ? { transfer_message: options.message } : {}),
            },
          ],
        },
        heard: ['a human please'],
        steps: [transferStep, ...(options.steps ?? [])],
        transfer: async (to) => {
          asked.push({ to, at: s.timers.now() });
          await options.carrier?.(to);
        },
      });
      await s.session.start();
      await s.feed(400, 0);
      await s.feed(400, SPEECH);
      await s.feed(1500, 0);
      return { s, asked };
    }

    it('asks the carrier only once the line before it has played, and ends call_transfer with where and when once the destination answers', async () => {
      const { s, asked } = await transferring();
      expect(asked).toHaveLength(1);
      const line = s.transport.notices.filter((n) => n.type === 'transcript' && n.role === 'agent');
      expect(line).toHaveLength(1);
      expect(s.result()).toBeUndefined();
      s.session.transfer.answered();
      await s.wait(20);
      const r = s.result()!;
      expect(r).toMatchObject({
        reason: 'call_transfer',
        message: 'Transferred to +14155550123.',
        transfer: { destination: '+14155550123' },
      });
      expect(r.transfer!.at).toBeGreaterThan(asked[0]!.at);
      // The line the caller heard ended before the carrier was asked.
      expect(r.startTimestamp + r.transcript.at(-1)!.end_at * 1000).toBeLessThanOrEqual(asked[0]!.at);
    });

    it("says the tool's transfer_message after the model's words, and asks the carrier once both have played", async () => {
      const { s, asked } = await transferring({ message: 'Please hold while I connect you.' });
      await s.wait(3000);
      s.session.transfer.answered();
      await s.wait(20);
      const r = s.result()!;
      expect(r.transcript.map((m) => m.content)).toEqual([
        'a human please',
        'Let me put you through.',
        'Please hold while I connect you.',
      ]);
      expect(r.startTimestamp + r.transcript.at(-1)!.end_at * 1000).toBeLessThanOrEqual(asked[0]!.at);
    });

    it('tells the model when the transfer failed, once the caller is back, and the agent speaks again', async () => {
      const { s } = await transferring({ steps: [say('Sorry, nobody picked up.')] });
      s.session.transfer.failed('nobody answered');
      await s.wait(3000);
      expect(s.brain.calls).toHaveLength(1);
      s.session.transfer.resume();
      await s.wait(2000);
      expect(s.brain.calls[1]!.at(-1)).toMatchObject({
        role: 'system',
        content: expect.stringContaining('The transfer did not go through to +14155550123: nobody answered.'),
      });
      s.transport.handlers.hangup();
      await s.wait(20);
      expect(s.result()!.transcript.map((m) => m.content)).toEqual([
        'a human please',
        'Let me put you through.',
        'Sorry, nobody picked up.',
      ]);
      expect(s.result()!.transfer).toBeNull();
    });

    it('keeps the caller with the agent when the carrier refuses the transfer, and ends user_hangup if a caller sent back never arrives', async () => {
      const refused = await transferring({
        carrier: async () => Promise.reject(new Error('no')),
        steps: [say('I could not transfer you.')],
      });
      await refused.s.wait(2000);
      expect(refused.s.brain.calls[1]!.at(-1)).toMatchObject({
        role: 'system',
        content: expect.stringContaining('the phone line could not start it'),
      });
      expect(refused.s.result()).toBeUndefined();

      const gone = await transferring();
      gone.s.session.transfer.failed('the line was busy');
      await gone.s.wait(15_000, 500);
      expect(gone.s.result()).toMatchObject({
        reason: 'user_hangup',
        message: 'The transfer to +14155550123 failed (the line was busy) and the caller did not come back.',
      });
    });
  });

  it('without a carrier that transfers, ends with call_transfer when the model transfers the caller', async () => {
    const transfer: BrainStep = async () => ({
      kind: 'transfer_call',
      call: { id: 't', name: 'transfer_call', arguments: '{}' },
      transferTo: '+14155550123',
      messages: [],
    });
    const s = setup({ heard: ['a human please'], steps: [transfer] });
    await s.session.start();
    await s.feed(400, 0);
    await s.feed(400, SPEECH);
    await s.feed(800, 0);
    expect(s.result()).toMatchObject({ reason: 'call_transfer', message: 'Transferred to +14155550123.' });
  });

  it('ends with the guard’s reason (credit balance used up) during the call', async () => {
    const s = setup({ guard: async (ms) => (ms >= 3000 ? 'insufficient_balance' : null) });
    await s.session.start();
    await s.wait(5000, 100);
    const r = s.result()!;
    expect(r.reason).toBe('insufficient_balance');
    expect(r.endTimestamp - r.startTimestamp).toBe(3000);
  });

  it('runs an hour of call time in milliseconds and ends with max_duration_reached at exactly the limit', async () => {
    const started = performance.now();
    const heard = Array.from({ length: 200 }, (_, i) => `turn ${i}`);
    const s = setup({ agent: { max_duration_ms: 3_600_000 }, heard, fallback: say('Okay.') });
    await s.session.start();
    for (let t = 0; t < 3_600_000 && !s.result(); t += 20_000) {
      await s.feed(400, SPEECH);
      await s.feed(800, 0);
      await s.wait(18_800, 2000);
    }
    const r = s.result()!;
    expect(r.reason).toBe('max_duration_reached');
    expect(r.endTimestamp - r.startTimestamp).toBe(3_600_000);
    expect(r.userTurns).toBe(180);
    expect(r.transcript).toHaveLength(1 + 180 * 2);
    expectOrdered(r);
    expect(r.latency?.e2e?.num).toBe(180);
    expect(performance.now() - started).toBeLessThan(30_000);
  }, 60_000);

  it('maps interruption_sensitivity to a threshold: 1 → 200 ms, 0.5 → 600 ms, 0 → 1 s', () => {
    expect([interruptionThresholdMs(1), interruptionThresholdMs(0.5), interruptionThresholdMs(0)]).toEqual([
      200, 600, 1000,
    ]);
  });
});
