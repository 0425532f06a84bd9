// What the carrier conformance suite (test/carriers/conformance-suite.ts) needs of each carrier:
// a small driver, kept in the carrier's own test folder (test/carriers/<name>/driver.ts) and listed
// in drivers.ts. The phones of every carrier run the same scripts (the simulated phones' own
// script language, carriers/sim/script.ts), so one case reads the same whichever carrier runs it.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import type { TestService } from '../helpers/service.ts';

/** The phone scripts every driver's answering phones can run, by name. */
export const SCRIPTS = {
  /** Says "no thank you" after the greeting and stays on: the agent says goodbye and hangs up. */
  'conf-no-thanks': [{ wait_for_agent: true }, { say: '05-no-thank-you-rms.8k-ulaw.wav' }, { wait_for_agent: true }],
  /** Says "yes please" after the greeting, hears the answer, hangs up. */
  'conf-hangs-up': [
    { wait_for_agent: true },
    { say: '04-yes-please-kal.8k-ulaw.wav' },
    { wait_for_agent: true },
    { hangup: true },
  ],
  /** Presses 1 after the greeting, hears the answer, hangs up. */
  'conf-keypad': [{ wait_for_agent: true }, { digits: '1' }, { wait_for_agent: true }, { hangup: true }],
  /** A caller's whole call: says "yes please" after the greeting, hears the answer, presses 1, hears it, hangs up. */
  'conf-caller': [
    { wait_for_agent: true },
    { say: '04-yes-please-kal.8k-ulaw.wav' },
    { wait_for_agent: true },
    { digits: '1' },
    { wait_for_agent: true },
    { hangup: true },
  ],
  /** Talks over the greeting half a second into it, hears the answer, hangs up (not waiting out its max_ms). */
  'conf-barges-in': [
    { barge_in_after_ms: 500 },
    { say: '05-no-thank-you-rms.8k-ulaw.wav' },
    { wait_for_agent: true },
    { hangup: true },
  ],
  /** Asks for a person after the greeting and stays on while it is put through. */
  'conf-transfer-me': [{ wait_for_agent: true }, { say: '11-can-i-speak-to-awb.8k-ulaw.wav' }, { wait_ms: 10_000 }],
} as const;
export type ScriptName = keyof typeof SCRIPTS;

/** Writes SCRIPTS as <name>.json into a new directory (SIM_SCRIPTS_DIR's form), audio paths relative to it. */
export function writeScripts(): string {
  const dir = mkdtempSync(join(tmpdir(), 'carrier-conformance-'));
  const fixtures = relative(dir, resolve(import.meta.dirname, '..', '..', 'media', 'fixtures'));
  for (const [name, steps] of Object.entries(SCRIPTS)) {
    const resolved = steps.map((step) => ('say' in step ? { say: join(fixtures, step.say) } : step));
    writeFileSync(join(dir, `${name}.json`), JSON.stringify({ steps: resolved, max_ms: 10_000 }));
  }
  return dir;
}

export interface CarrierDriver {
  /** The registered carrier (carriers/registry.ts) this drives. */
  readonly carrier: string;
  /** Starts what stands in for the carrier's far side; `scriptsDir` holds SCRIPTS. */
  start(scriptsDir: string): Promise<void>;
  close(): Promise<void>;
  /** What the service is configured with to use this carrier (merged with the other drivers'). */
  env(): Record<string, string>;
  /** What the carrier needs of the running service before calls (an organization's carrier account). */
  setUp?(service: TestService): Promise<void>;
  /** The number its outbound calls come from; the suite's default (Twilio's inbound number) when absent. */
  readonly from?: string;
  /** A phone that answers and runs `script`. */
  answering(script: ScriptName): string;
  /** A phone that is busy, and one that rings out. */
  readonly busy: string;
  readonly noAnswer: string;
  /** Where the agent's cold transfer goes: a phone that answers. */
  readonly desk: string;
  /**
   * Resolves once the service hung the carrier's leg of `callId` up (agent_hangup); absent when a closed stream is all
   * a carrier needs.
   */
  hungUpByService?(callId: string): Promise<void>;
  /**
   * Set when the carrier runs another carrier's media and REST code (SignalWire runs Twilio's,
   * carriers/twilio/flavor.ts): the cases that only that shared code decides (talking over the
   * greeting, the cold transfer) run on that carrier alone, and this one runs what its own settings
   * change: words both ways in its codec, dial outcomes, signatures.
   */
  readonly sharesCallCodeWith?: string;
  /** The carrier's inbound calls; absent when it places calls only (the simulated phones). */
  readonly inbound?: {
    /** The number the suite's agent answers. */
    readonly number: string;
    /** A call to `number` from a phone that runs `script`: the call's id, once the service answered it. */
    call(serviceUrl: string, script: ScriptName): Promise<string>;
    /**
     * The carrier's inbound webhook with a signature that does not match: the service's answer. A SIP trunk has no
     * webhook: its equivalent is an INVITE that no trunk admits.
     */
    badlySigned(serviceUrl: string): Promise<{ status: number }>;
  };
  /**
   * Opens the carrier's media stream for `callId` without its secret: resolves with the close code. Absent where the
   * media is no stream the service serves (SIP's is RTP on the call's own port, heard only from the negotiated
   * address: carriers/sip/rtp-endpoint.ts), so the case does not run there.
   */
  streamWithoutSecret?(serviceUrl: string, callId: string): Promise<number>;
  /**
   * Where the carrier's warm transfer is implemented (a second leg to `desk`, told a summary, then joined to the
   * caller's): whether the two legs of `callId` were joined on the carrier. Absent: the warm case does not run.
   */
  readonly warmTransfer?: { joined(callId: string): Promise<boolean> | boolean };
}
