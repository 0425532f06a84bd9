// What a simulated callee does once it answers: a JSON script of recorded phrases and pauses,
// kept in SIM_SCRIPTS_DIR (<name>.json). Audio paths are relative to the script file.
import { readFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { z } from 'zod';
import { muLawEncode, readWavFile } from '../../audio/index.ts';
import { ConfigError } from '../../config.ts';

const StepSchema = z.union([
  z.strictObject({ say: z.string().min(1).describe('WAV file, relative to the script') }),
  z.strictObject({ wait_ms: z.int().min(0).max(600_000).describe('silence on the line') }),
  z.strictObject({ hangup: z.literal(true) }),
]);

export const SimScriptSchema = z.strictObject({
  steps: z.array(StepSchema).max(200),
  /** After the last step the callee stays on the line (the agent may hang up) at most this long. */
  max_ms: z.int().min(0).max(3_600_000).default(30_000),
});

export type SimStep = { kind: 'say'; file: string; mulaw: Uint8Array } | { kind: 'wait'; ms: number } | { kind: 'hangup' };

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
    throw new ConfigError(`simulated phone script ${file}: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
  }
  const steps: SimStep[] = [];
  for (const step of parsed.data.steps) {
    if ('say' in step) {
      const audio = join(dirname(file), step.say);
      try {
        const pcm = await readWavFile(audio, 8000);
        steps.push({ kind: 'say', file: audio, mulaw: muLawEncode(pcm.samples) });
      } catch (error) {
        throw new ConfigError(`simulated phone script ${name}: cannot read ${audio}: ${(error as Error).message}`);
      }
    } else if ('wait_ms' in step) steps.push({ kind: 'wait', ms: step.wait_ms });
    else steps.push({ kind: 'hangup' });
  }
  return { name, steps, maxMs: parsed.data.max_ms };
}
