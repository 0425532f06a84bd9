import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import wavefile from 'wavefile';
import { afterAll, describe, expect, it } from 'vitest';
import { replaySteps, scriptSteps } from '../../src/agent-tests/callers.ts';
import { ScriptCallerSchema } from '../../src/agent-tests/schema.ts';
import { muLawDecode } from '../../src/audio/g711.ts';
import { registeredRecord, type CallRecord, type TranscriptMessage } from '../../src/records/record.ts';
import type { SimStep } from '../../src/carriers/sim/script.ts';

/** Steps without their audio, and what each say holds (its text, or its samples' first value). */
const shape = (steps: SimStep[]) =>
  steps.map((s) => (s.kind === 'say' ? { kind: 'say', file: s.file, bytes: s.mulaw.length } : s));

const speak = async (text: string, voice: string) => new Uint8Array(text.length * 10 + voice.length);

describe('scripted callers', () => {
  it("speaks each line on the caller's turn, after the agent has spoken and finished, unless a wait sets its time or it cuts in", async () => {
    const { script } = ScriptCallerSchema.parse({
      script: [
        { say: 'Hi.' },
        { wait_ms: 800 },
        { say: 'I mean hello.' },
        { digits: '12#' },
        { say: 'Wait!', barge_in_after_ms: 400 },
        { hangup: true },
      ],
    });
    expect(shape(await scriptSteps(script, { speak, voice: 'rms', agentGreets: true }))).toEqual([
      { kind: 'wait_for_agent', timeoutMs: 30_000 },
      { kind: 'say', file: '(rms) Hi.', bytes: 33 },
      { kind: 'wait', ms: 800 },
      { kind: 'say', file: '(rms) I mean hello.', bytes: 133 },
      { kind: 'wait_for_agent', timeoutMs: 30_000 },
      { kind: 'digits', keys: '12#' },
      { kind: 'barge_in', afterMs: 400 },
      { kind: 'say', file: '(rms) Wait!', bytes: 53 },
      { kind: 'hangup' },
    ]);
  });

  it('opens the call itself when the agent has no greeting', async () => {
    const { script } = ScriptCallerSchema.parse({ script: [{ say: 'Hello?' }] });
    expect(shape(await scriptSteps(script, { speak, voice: 'awb', agentGreets: false }))[0]).toMatchObject({
      kind: 'say',
    });
  });
});

describe('replayed callers', () => {
  const dir = mkdtempSync(join(tmpdir(), 'replay-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  /** A two-channel recording at 8 kHz whose caller channel holds, at each second, that second's number. */
  function recording(seconds: number): string {
    const left = new Int16Array(seconds * 8000);
    for (let s = 0; s < seconds; s++) left.fill(s * 100, s * 8000, (s + 1) * 8000);
    const wav = new wavefile.WaveFile();
    wav.fromScratch(2, 8000, '16', [left, new Int16Array(left.length).fill(-5)]);
    const file = join(dir, `rec-${seconds}.wav`);
    writeFileSync(file, wav.toBuffer());
    return file;
  }

  const message = (
    role: 'agent' | 'user',
    content: string,
    start_at: number,
    end_at: number,
    input?: 'keypad',
  ): TranscriptMessage => ({ role, content, start_at, end_at, ...(input ? { input } : {}) });
  const callOf = (transcript: TranscriptMessage[], overrides: Partial<CallRecord> = {}): CallRecord => ({
    ...registeredRecord({
      call_id: 'call_o',
      agent_id: 'demo',
      agent_version: 1,
      call_type: 'outbound',
      call_from: null,
      call_to: null,
    }),
    call_status: 'ended',
    disconnection_reason: 'agent_hangup',
    duration_ms: 12_000,
    transcript,
    ...overrides,
  });

  it("plays each caller turn from the caller's channel, timed from the end of the agent's turn before it, or from its own last turn", async () => {
    const file = recording(12);
    const steps = await replaySteps(
      callOf([
        message('agent', 'Your name?', 0.2, 2),
        message('user', 'John.', 3, 4),
        message('user', 'Smith.', 5, 5.5),
        message('agent', 'Shall I book it?', 6, 7.5),
        message('user', '1', 8, 8.1, 'keypad'),
        message('agent', 'All set.', 8.6, 10),
      ]),
      file,
    );
    expect(shape(steps)).toEqual([
      { kind: 'wait_for_agent', timeoutMs: 30_000, pauseMs: 700 },
      { kind: 'say', file: '(call_o at 2.70 s)', bytes: Math.round(1.6 * 8000) },
      { kind: 'wait', ms: 400 },
      { kind: 'say', file: '(call_o at 4.70 s)', bytes: Math.round(1.1 * 8000) },
      { kind: 'wait_for_agent', timeoutMs: 30_000, pauseMs: 500 },
      { kind: 'digits', keys: '1' },
    ]);
    // The caller's channel, not the agent's: 2.7 s in is second 2's value.
    const said = steps[1] as Extract<SimStep, { kind: 'say' }>;
    expect(Math.abs(muLawDecode(said.mulaw)[0]! - 200)).toBeLessThan(8);
  });

  it('cuts into the agent where the caller did, and hangs up as long after the last words as the caller did', async () => {
    const file = recording(10);
    const steps = await replaySteps(
      callOf(
        [
          message('agent', 'Let me tell you about our offers today and', 0.5, 3),
          message('user', 'No thanks.', 2.3, 3.2),
        ],
        { disconnection_reason: 'user_hangup', duration_ms: 5_000 },
      ),
      file,
    );
    expect(shape(steps)).toEqual([
      { kind: 'barge_in', afterMs: 1500 },
      { kind: 'say', file: '(call_o at 2.00 s)', bytes: Math.round(1.5 * 8000) },
      { kind: 'wait', ms: 1500 },
      { kind: 'hangup' },
    ]);
  });
});
