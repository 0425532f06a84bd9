// SIM_NUMBERS: which numbers the built-in simulated phones answer, and how. Either
// "+15550001=answer:script-name,+15550002=no_answer,+15550003=fail,+15550004=voicemail"
// or the path of a JSON file holding {"+15550001": "answer:script-name", …}.
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { E164 } from '../../agents/schema.ts';
import { ConfigError } from '../../config.ts';

export const SIM_BEHAVIORS = ['answer', 'no_answer', 'fail', 'busy', 'voicemail'] as const;
export type SimBehavior = (typeof SIM_BEHAVIORS)[number];

export interface SimPhone {
  behavior: SimBehavior;
  /** Script the callee speaks once it answers (answer, voicemail); none: it listens in silence. */
  script: string | undefined;
}

const SCRIPT_NAME = /^[A-Za-z0-9_-]{1,64}$/;

function parseEntry(number: string, spec: string): SimPhone {
  if (!E164.safeParse(number).success)
    throw new ConfigError(`SIM_NUMBERS: ${JSON.stringify(number)} is not an E.164 number`);
  const [behavior, script, ...rest] = spec.split(':').map((s) => s.trim());
  if (!SIM_BEHAVIORS.includes(behavior as SimBehavior) || rest.length > 0) {
    throw new ConfigError(
      `SIM_NUMBERS: ${number}=${spec}: expected one of ${SIM_BEHAVIORS.join(', ')}, optionally followed by :script-name`,
    );
  }
  if (script !== undefined && (!SCRIPT_NAME.test(script) || (behavior !== 'answer' && behavior !== 'voicemail'))) {
    throw new ConfigError(
      `SIM_NUMBERS: ${number}=${spec}: only answer and voicemail take a script, named with letters, digits, _ and -`,
    );
  }
  return { behavior: behavior as SimBehavior, script };
}

export function parseSimNumbers(value: string): Map<string, SimPhone> {
  const phones = new Map<string, SimPhone>();
  const trimmed = value.trim();
  if (!trimmed.includes('=')) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(readFileSync(trimmed, 'utf8'));
    } catch (error) {
      throw new ConfigError(`SIM_NUMBERS: cannot read ${trimmed} as a JSON file: ${(error as Error).message}`);
    }
    const map = z.record(z.string(), z.string()).safeParse(parsed);
    if (!map.success)
      throw new ConfigError(`SIM_NUMBERS: ${trimmed} must hold an object of "number": "behavior[:script]"`);
    for (const [number, spec] of Object.entries(map.data)) phones.set(number, parseEntry(number, spec));
    return phones;
  }
  for (const item of trimmed.split(',')) {
    if (item.trim() === '') continue;
    const eq = item.indexOf('=');
    if (eq === -1) throw new ConfigError(`SIM_NUMBERS: ${JSON.stringify(item)} has no "="`);
    phones.set(item.slice(0, eq).trim(), parseEntry(item.slice(0, eq).trim(), item.slice(eq + 1)));
  }
  return phones;
}
