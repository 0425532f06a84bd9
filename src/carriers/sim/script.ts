// What a simulated callee does once it answers: a JSON script of recorded phrases, pauses, keys
// and listening, kept in SIM_SCRIPTS_DIR (<name>.json). Audio paths are relative to the script file.
// A phone menu is a `wait_for_digits` step whose branches hold the steps for each key pressed.
import { readFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { z } from 'zod';
import { muLawEncode } from '../../audio/g711.ts';
import { readWavFile } from '../../audio/wav.ts';
import { ConfigError } from '../../config.ts';

const KEYS = /^[0-9*#A-D]+$/;

const WaitForDigitsSchema = z.strictObject({
  wait_for_digits: z.int().min(1).max(32).describe('listen for this many keypad tones from the agent'),
  timeout_ms: z
    .int()
    .min(100)
    .max(600_000)
    .default(15_000)
    .describe('the script fails when they have not all come by then'),
  /**
   * The steps for each entry (the keys, in order); an entry no branch names fails the script. Without branches any
   * entry goes on.
   */
  get branches() {
    return z.record(z.string().regex(KEYS, 'keypad keys: 0-9, *, #, A-D'), z.array(StepSchema).max(200)).optional();
  },
});

const StepSchema: z.ZodType<StepInput> = z.union([
  z.strictObject({ say: z.string().min(1).describe('WAV file, relative to the script') }),
  z.strictObject({ wait_ms: z.int().min(0).max(600_000).describe('silence on the line') }),
  z.strictObject({
    wait_for_agent: z
      .literal(true)
      .describe(
        "until the agent has spoken since the caller did and its words have played (by their marks), then a person's pause of 300-800 ms",
      ),
    timeout_ms: z
      .int()
      .min(100)
      .max(600_000)
      .default(30_000)
      .describe('the script fails when the agent has not finished by then'),
  }),
  z.strictObject({
    barge_in_after_ms: z
      .int()
      .min(0)
      .max(600_000)
      .describe('once the agent starts speaking, this long, then the next step (a say talks over it)'),
  }),
  z.strictObject({
    expect: z
      .string()
      .min(1)
      .max(1000)
      .refine((source) => {
        try {
          new RegExp(source, 'i');
          return true;
        } catch {
          return false;
        }
      }, 'not a valid regular expression')
      .describe(
        "a case-insensitive regular expression the agent's words since the caller last spoke must match, else the script fails",
      ),
  }),
  z.strictObject({
    digits: z
      .string()
      .regex(KEYS, 'keypad keys: 0-9, *, #, A-D')
      .max(64)
      .describe('keys pressed on the phone, one every 200 ms'),
  }),
  WaitForDigitsSchema,
  z.strictObject({ hangup: z.literal(true) }),
]);

type StepInput =
  | { say: string }
  | { wait_ms: number }
  | { wait_for_agent: true; timeout_ms: number }
  | { barge_in_after_ms: number }
  | { expect: string }
  | { digits: string }
  | { wait_for_digits: number; timeout_ms: number; branches?: Record<string, StepInput[]> | undefined }
  | { hangup: true };

export const SimScriptSchema = z.strictObject({
  steps: z.array(StepSchema).max(200),
  /** After the last step the callee stays on the line (the agent may hang up) at most this long. */
  max_ms: z.int().min(0).max(3_600_000).default(30_000),
});

export type SimStep =
  | { kind: 'say'; file: string; mulaw: Uint8Array }
  | { kind: 'wait'; ms: number }
  /**
   * pauseMs: a fixed pause after the agent finished instead of a person's random one (a replayed caller keeps its own).
   */
  | { kind: 'wait_for_agent'; timeoutMs: number; pauseMs?: number }
  | { kind: 'barge_in'; afterMs: number }
  | { kind: 'expect'; pattern: RegExp }
  | { kind: 'digits'; keys: string }
  | { kind: 'wait_for_digits'; count: number; timeoutMs: number; branches: Map<string, SimStep[]> | null }
  | { kind: 'hangup' };

export interface SimScript {
  name: string;
  steps: SimStep[];
  maxMs: number;
}

/** A callee without a script listens in silence until the agent hangs up (or max_ms). */
export const SILENT_SCRIPT: SimScript = { name: '(silent)', steps: [], maxMs: 30_000 };

export async function loadSimScript(dir: string, name: string): Promise<SimScript> {
  const file = resolve(join(dir, `${name}.json`));
  let raw: unknown;
  try {
    raw = JSON.parse(await readFile(file, 'utf8'));
  } catch (error) {
    throw new ConfigError(`simulated phone script ${name}: cannot read ${file}: ${(error as Error).message}`);
  }
  const parsed = SimScriptSchema.safeParse(raw);
  if (!parsed.success) {
    throw new ConfigError(
      `simulated phone script ${file}: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`,
    );
  }
  const steps = await loadSteps(parsed.data.steps, name, dirname(file));
  return { name, steps, maxMs: parsed.data.max_ms };
}

async function loadSteps(input: readonly StepInput[], name: string, dir: string): Promise<SimStep[]> {
  const steps: SimStep[] = [];
  for (const step of input) {
    if ('say' in step) {
      const audio = join(dir, step.say);
      try {
        const pcm = await readWavFile(audio, 8000);
        steps.push({ kind: 'say', file: audio, mulaw: muLawEncode(pcm.samples) });
      } catch (error) {
        throw new ConfigError(`simulated phone script ${name}: cannot read ${audio}: ${(error as Error).message}`);
      }
    } else if ('wait_ms' in step) steps.push({ kind: 'wait', ms: step.wait_ms });
    else if ('wait_for_agent' in step) steps.push({ kind: 'wait_for_agent', timeoutMs: step.timeout_ms });
    else if ('barge_in_after_ms' in step) steps.push({ kind: 'barge_in', afterMs: step.barge_in_after_ms });
    else if ('expect' in step) steps.push({ kind: 'expect', pattern: new RegExp(step.expect, 'i') });
    else if ('digits' in step) steps.push({ kind: 'digits', keys: step.digits });
    else if ('wait_for_digits' in step) {
      let branches: Map<string, SimStep[]> | null = null;
      if (step.branches) {
        branches = new Map();
        for (const [keys, branch] of Object.entries(step.branches))
          branches.set(keys, await loadSteps(branch, name, dir));
      }
      steps.push({ kind: 'wait_for_digits', count: step.wait_for_digits, timeoutMs: step.timeout_ms, branches });
    } else steps.push({ kind: 'hangup' });
  }
  return steps;
}
