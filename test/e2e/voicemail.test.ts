// An outbound call that an answering machine takes, end to end over real sockets with the embedded
// engines: the simulated machine plays its greeting and beep (media/sim-scripts/voicemail.json),
// the service tells it from a person by the audio, and the agent leaves its message after the beep.
// A person who answers "Hello?" and waits (media/sim-scripts/hello-kal.json) is greeted within a
// second of their word while the detector still listens.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loudBounds } from '../../bench/harness.ts';
import { readWavFile } from '../../src/audio/wav.ts';
import { callEnded, startTestService, type TestService } from '../helpers/service.ts';

let t: TestService;
const MACHINE = '+15550004';
const PERSON = '+15550005';
const GREETING = 'Hi, this is the demo clinic.';
const MESSAGE = 'Hi {{name}}, this is the demo clinic. Please call us back.';

beforeAll(async () => {
  t = await startTestService({
    SIM_NUMBERS: `${MACHINE}=voicemail:voicemail,${PERSON}=answer:hello-kal`,
    SIM_ANSWER_DELAY_MS: '200',
  });
  const demo = (await t.request('GET', '/v2/agents/demo')).body as Record<string, unknown>;
  const { agent_id: _id, version: _v, is_published: _p, last_modified: _m, ...config } = demo;
  const created = await t.request('POST', '/v2/agents', {
    body: { ...config, agent_id: 'clinic-vm', voicemail: { detect: true, action: 'leave_message', message: MESSAGE } },
  });
  expect(created.status).toBe(201);
  const greets = await t.request('POST', '/v2/agents', {
    body: {
      ...config,
      agent_id: 'clinic-greets',
      begin_message: GREETING,
      voicemail: { detect: true, action: 'leave_message', message: MESSAGE },
    },
  });
  expect(greets.status).toBe(201);
}, 60_000);
afterAll(async () => t?.stop());

describe('voicemail', () => {
  it('knows the machine from its greeting, waits for the beep, leaves the message with its variables filled, and ends voicemail_reached', async () => {
    const placed = await t.request('POST', '/v2/calls', {
      body: { call_from: '+14155550100', call_to: MACHINE, agent_id: 'clinic-vm', dynamic_variables: { name: 'Sam' } },
    });
    expect(placed.status).toBe(201);
    const record = await callEnded(t, (placed.body as { call_id: string }).call_id);
    expect(record).toMatchObject({ call_status: 'ended', disconnection_reason: 'voicemail_reached' });
    expect(record.disconnection_message).toMatch(
      /^An answering machine answered \(found by its (greeting words|long greeting|beep)\); the voicemail message was left\.$/,
    );
    const message = record.transcript!.at(-1)!;
    expect(message).toMatchObject({ role: 'agent', content: 'Hi Sam, this is the demo clinic. Please call us back.' });
    // The machine's beep ends 0.3 + greeting + 0.4 + 0.5 s into its script, which its audio begins with: the service
    // heard it end there in that audio, give or take a frame or two. On the call's clock, which places the audio by
    // when it came (moved by hundreds of ms on a loaded machine), the message starts after the beep, within 3 s.
    const greeting = await readWavFile(
      new URL('../../media/sim-scripts/prompts/voicemail-greeting-slt.8k-ulaw.wav', import.meta.url).pathname,
    );
    const beepEnd = 0.3 + greeting.samples.length / greeting.sampleRate + 0.4 + 0.5;
    const heard = t.logs
      .map((l) => JSON.parse(l) as { call_id?: string; msg?: string; end_ms?: number; in_audio_ms?: number })
      .find((l) => l.call_id === record.call_id && l.msg === 'answering machine beep');
    expect(heard?.end_ms).toBeDefined();
    expect(Math.abs(heard!.in_audio_ms! / 1000 - beepEnd)).toBeLessThanOrEqual(0.06);
    const beepHeardEnd = heard!.end_ms! / 1000;
    expect(message.start_at).toBeGreaterThanOrEqual(beepHeardEnd);
    expect(message.start_at).toBeLessThanOrEqual(beepHeardEnd + 3);
    // Whatever the agent had begun to say to the greeting was cut once the machine was known.
    for (const m of record.transcript!.slice(0, -1)) expect(m.end_at).toBeLessThan(message.start_at);
    expect(t.logs.some((l) => l.includes('"answered_by":"machine"'))).toBe(true);
  }, 60_000);

  it('greets a person at the pause after their "Hello?", within a second of its end as the service heard it, not before it, while the detector listens on', async () => {
    const placed = await t.request('POST', '/v2/calls', {
      body: { call_from: '+14155550100', call_to: PERSON, agent_id: 'clinic-greets' },
    });
    expect(placed.status).toBe(201);
    const callId = (placed.body as { call_id: string }).call_id;
    const record = await callEnded(t, callId);
    // The person hangs up once the greeting has played (its script): a person, not a machine.
    expect(record.disconnection_reason).toBe('user_hangup');
    const hello = await readWavFile(
      new URL('../../media/sim-scripts/prompts/hello-kal.8k-ulaw.wav', import.meta.url).pathname,
    );
    // Its script waits 300 ms after answering, then says "Hello?" (the voice ends before the file's trailing quiet).
    const voice = loudBounds(hello.samples, 300);
    const helloEnd = 0.3 + voice.to / hello.sampleRate;
    const greeting = record.transcript!.find((m) => m.role === 'agent');
    expect(greeting).toMatchObject({ content: GREETING });
    // Its "Hello?", when the recogniser made words of it, is kept before the greeting and not answered by the model.
    expect(record.transcript!.filter((m) => m.role === 'agent')).toHaveLength(1);
    expect(greeting!.start_at).toBeGreaterThan(helloEnd);
    // On the call's audio clock (what the service had heard, whatever its VAD's lag on a busy machine): the greeting
    // answered the pause after the hello (not a quiet answer, not the detector), once the whole hello was heard and
    // within a second of its end.
    const greeted = JSON.parse(t.logs.find((l) => l.includes(callId) && l.includes('"greeting the callee"'))!) as {
      after: string;
      at_ms: number;
      callee_from_ms: number;
    };
    expect(greeted.after).toBe('pause');
    const helloLength = (voice.to - voice.from) / hello.sampleRate;
    const sinceHelloEnd = (greeted.at_ms - greeted.callee_from_ms) / 1000 - helloLength;
    expect(sinceHelloEnd).toBeGreaterThan(0);
    expect(sinceHelloEnd).toBeLessThanOrEqual(1.0);
    // The detector decided only after the greeting had begun (the same clock).
    const decided = t.logs.find((l) => l.includes(callId) && l.includes('"answered_by"'));
    expect(decided).toContain('"answered_by":"human"');
    expect(Number(/"at_ms":(\d+)/.exec(decided!)![1])).toBeGreaterThan(greeted.at_ms);
  }, 60_000);
});
