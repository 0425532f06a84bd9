// The caller side of a test, as steps for a simulated phone on the phone path: a script's lines
// spoken by a flite voice, or a stored call's caller channel replayed at its recorded times.
import { muLawEncode } from '../audio/g711.ts';
import { concatPcm } from '../audio/pcm.ts';
import { readWavFile } from '../audio/wav.ts';
import type { CallRecord, TranscriptMessage } from '../records/record.ts';
import type { SimStep } from '../carriers/sim/script.ts';
import type { TtsEngine } from '../speech/types.ts';
import type { ScriptStep } from './schema.ts';

/** The phone line's rate: a test caller is a phone. */
export const CALLER_RATE = 8000;
/** How long the caller waits for the agent to speak and finish before its turn. */
export const AGENT_TURN_TIMEOUT_MS = 30_000;
/** A replayed turn starts this much before the recognised speech start (the VAD hears it a little late). */
const REPLAY_LEAD_S = 0.3;
/** ...and ends this much after its recognised end, so a soft last syllable is not cut. */
const REPLAY_TAIL_S = 0.3;

/** Text to μ-law at the phone rate in the given voice. */
export type SpeakText = (text: string, voice: string) => Promise<Uint8Array>;

export function speakWith(tts: TtsEngine): SpeakText {
  return async (text, voice) => {
    const chunks: Int16Array[] = [];
    for await (const chunk of tts.synthesize(text, { sampleRate: CALLER_RATE, voiceId: voice }))
      chunks.push(chunk.samples);
    return muLawEncode(concatPcm(chunks));
  };
}

/**
 * A script's steps for the simulated phone. A `say` or `digits` comes on the caller's turn — once the
 * agent has spoken and finished, after a person's pause — unless it follows a `wait_ms` (which sets
 * its time instead), cuts in (`barge_in_after_ms`), or opens the call of an agent with no greeting.
 */
export async function scriptSteps(
  script: readonly ScriptStep[],
  o: { speak: SpeakText; voice: string; agentGreets: boolean },
): Promise<SimStep[]> {
  const steps: SimStep[] = [];
  let previous: ScriptStep | undefined;
  for (const step of script) {
    const onTurn = previous === undefined ? o.agentGreets : !('wait_ms' in previous);
    if ('say' in step) {
      if (step.barge_in_after_ms !== undefined) steps.push({ kind: 'barge_in', afterMs: step.barge_in_after_ms });
      else if (onTurn) steps.push({ kind: 'wait_for_agent', timeoutMs: AGENT_TURN_TIMEOUT_MS });
      steps.push({ kind: 'say', file: `(${o.voice}) ${step.say}`, mulaw: await o.speak(step.say, o.voice) });
    } else if ('digits' in step) {
      if (onTurn) steps.push({ kind: 'wait_for_agent', timeoutMs: AGENT_TURN_TIMEOUT_MS });
      steps.push({ kind: 'digits', keys: step.digits });
    } else if ('wait_ms' in step) steps.push({ kind: 'wait', ms: step.wait_ms });
    else steps.push({ kind: 'hangup' });
    previous = step;
  }
  return steps;
}

const KEYPAD = /^[0-9*#A-D]+$/;

/**
 * A stored call's caller, turn by turn from its transcript and recording (the caller is the left
 * channel): each turn is played at its recorded time relative to what came before it — its pause
 * after the agent finished, its cut into the agent, or its gap after the caller's own last turn —
 * so when the agent now speaks longer or shorter, the caller still answers it as it did. A caller
 * who hung up hangs up as long after the last word; one the agent hung up on stays for it.
 */
export async function replaySteps(record: CallRecord, recordingFile: string): Promise<SimStep[]> {
  const messages = [...(record.transcript ?? [])].sort((a, b) => a.start_at - b.start_at);
  const caller = (await readWavFile(recordingFile, CALLER_RATE, 0)).samples;
  const steps: SimStep[] = [];
  let playedTo = 0;
  let lastUser: TranscriptMessage | undefined;
  for (const [index, message] of messages.entries()) {
    if (message.role !== 'user') continue;
    const agent = messages.slice(0, index).findLast((m) => m.role === 'agent');
    const keyed = message.input === 'keypad' && KEYPAD.test(message.content);
    const from = keyed ? message.start_at : Math.max(playedTo, message.start_at - REPLAY_LEAD_S);
    const agentSinceCaller = agent !== undefined && (lastUser === undefined || agent.start_at >= lastUser.start_at);
    if (agentSinceCaller && agent.end_at > from)
      steps.push({ kind: 'barge_in', afterMs: msBetween(agent.start_at, from) });
    else if (agentSinceCaller)
      steps.push({ kind: 'wait_for_agent', timeoutMs: AGENT_TURN_TIMEOUT_MS, pauseMs: msBetween(agent.end_at, from) });
    else steps.push({ kind: 'wait', ms: msBetween(playedTo, from) });
    if (keyed) {
      steps.push({ kind: 'digits', keys: message.content });
      playedTo = message.end_at;
    } else {
      const to = Math.min(message.end_at + REPLAY_TAIL_S, caller.length / CALLER_RATE);
      const audio = caller.subarray(Math.round(from * CALLER_RATE), Math.round(to * CALLER_RATE));
      steps.push({ kind: 'say', file: `(${record.call_id} at ${from.toFixed(2)} s)`, mulaw: muLawEncode(audio) });
      playedTo = to;
    }
    lastUser = message;
  }
  if (record.disconnection_reason === 'user_hangup' && record.duration_ms !== null) {
    const end = record.duration_ms / 1000;
    const last = messages.at(-1);
    if (last?.role === 'agent' && (lastUser === undefined || last.start_at >= lastUser.start_at))
      steps.push({ kind: 'wait_for_agent', timeoutMs: AGENT_TURN_TIMEOUT_MS, pauseMs: msBetween(last.end_at, end) });
    else steps.push({ kind: 'wait', ms: msBetween(playedTo, end) });
    steps.push({ kind: 'hangup' });
  }
  return steps;
}

const msBetween = (fromS: number, toS: number): number => Math.max(0, Math.round((toS - fromS) * 1000));
