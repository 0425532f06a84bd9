import { describe, expect, it } from 'vitest';
import { AgentConfigSchema, type AgentConfig } from '../../../src/agents/schema.ts';
import type { AgentVoice } from '../../../src/call/agent/agent-voice.ts';
import type { Utterance } from '../../../src/call/agent/utterance.ts';
import type { FlowIntent } from '../../../src/call/flow.ts';
import { TRANSFER_DEFAULTS, TransferFlow, type ColdTransfer } from '../../../src/call/transfer/transfer-flow.ts';
import type { WarmTransferCarrier } from '../../../src/call/transfer/warm-transfer.ts';
import { NoTransferError } from '../../../src/records/dialer.ts';
import { ManualTimers } from '../../../src/timers.ts';
import { settle, silentLog } from '../../helpers/session-fakes.ts';

const TO = '+14155550123';

function tools(transfer: Record<string, unknown>): AgentConfig['tools'] {
  return AgentConfigSchema.parse({
    agent_name: 'T',
    llm: { base_url: 'http://127.0.0.1:9/v1', model: 'm' },
    tools: [{ type: 'transfer_call', transfer_to: TO, ...transfer }],
  }).tools;
}

/** A flow on a fake session and voice, recording the intents it gives and what the voice was asked. */
function setup(options: { cold?: ColdTransfer; warm?: WarmTransferCarrier; transfer?: Record<string, unknown> } = {}) {
  const timers = new ManualTimers(1_000);
  const intents: FlowIntent[] = [];
  const log: string[] = [];
  const host = { live: true, act: (intent: FlowIntent) => void intents.push(intent) };
  const voice = {
    finished: async () => void log.push('line played'),
    play: (_samples: Int16Array, o: { interruptible?: boolean } = {}) => {
      log.push(`hold music, interruptible: ${o.interruptible ?? true}`);
      return { done: new Promise<boolean>(() => undefined) } as unknown as Utterance;
    },
    interrupt: (o: { force?: boolean } = {}) => {
      log.push(`voice cut${o.force ? ' with force' : ''}`);
      return [];
    },
  } as unknown as AgentVoice;
  const flow = new TransferFlow({
    tools: tools(options.transfer ?? {}),
    cold: options.cold,
    warm: options.warm,
    voice,
    consultVoice: () => voice,
    summary: async () => 'A caller for you.',
    timers,
    host,
    log: silentLog,
  });
  return { timers, intents, log, host, flow };
}

describe('TransferFlow', () => {
  it("takes the turn, says the tool's line, asks the carrier only once it has played, and the destination answering ends call_transfer with where and when", async () => {
    const asked: string[] = [];
    const s = setup({ cold: async (to) => void asked.push(to), transfer: { transfer_message: 'Please hold.' } });
    s.flow.start('transfer_call', TO);
    expect(s.flow.holdsLine).toBe(true);
    expect(s.intents).toEqual([
      { kind: 'take_turn', cut: false },
      { kind: 'say', text: 'Please hold.' },
    ]);
    await settle();
    expect(s.log).toEqual(['line played']);
    expect(asked).toEqual([TO]);
    s.timers.advance(2_000);
    s.flow.answered();
    expect(s.intents[2]).toEqual({
      kind: 'end',
      reason: 'call_transfer',
      message: `Transferred to ${TO}.`,
      transferred: { destination: TO, at: 3_000 },
    });
  });

  it('a carrier that refuses the transfer gives the turn back to the model, told the phone line could not start it', async () => {
    const s = setup({ cold: async () => Promise.reject(new Error('no')) });
    s.flow.start('transfer_call', TO);
    await settle();
    expect(s.flow.holdsLine).toBe(false);
    expect(s.intents.at(-1)).toEqual({
      kind: 'give_back',
      note: expect.stringContaining(`The transfer did not go through to ${TO}: the phone line could not start it.`),
    });
  });

  it('a failed transfer waits returnMs for the caller to come back: back, the model is told why; never back, the call ends user_hangup', async () => {
    const back = setup({ cold: async () => undefined });
    back.flow.start('transfer_call', TO);
    await settle();
    expect(back.flow.failed('nobody answered')).toBe(true);
    expect(back.flow.failed('nobody answered')).toBe(false);
    back.flow.resume();
    expect(back.intents.at(-1)).toEqual({ kind: 'give_back', note: expect.stringContaining('nobody answered') });
    back.timers.advance(TRANSFER_DEFAULTS.returnMs);
    expect(back.intents.at(-1)?.kind).toBe('give_back');

    const gone = setup({ cold: async () => undefined });
    gone.flow.start('transfer_call', TO);
    await settle();
    gone.flow.failed('the line was busy');
    gone.timers.advance(TRANSFER_DEFAULTS.returnMs);
    expect(gone.intents.at(-1)).toEqual({
      kind: 'end',
      reason: 'user_hangup',
      message: `The transfer to ${TO} failed (the line was busy) and the caller did not come back.`,
    });
  });

  it('without a carrier that transfers, transfer_call only ends the call call_transfer', () => {
    const s = setup();
    s.flow.start('transfer_call', TO);
    expect(s.intents).toEqual([{ kind: 'end', reason: 'call_transfer', message: `Transferred to ${TO}.` }]);
    expect(s.flow.answered()).toBeUndefined();
  });

  it('a line no carrier can redirect (no account to transfer it through) ends call_transfer after the line, as one without transfers does', async () => {
    const s = setup({ cold: async () => Promise.reject(new NoTransferError('no Twilio account')) });
    s.flow.start('transfer_call', TO);
    await settle();
    expect(s.intents.at(-1)).toEqual({ kind: 'end', reason: 'call_transfer', message: `Transferred to ${TO}.` });
  });

  it('a warm transfer holds the caller with music they cannot cut; a second leg that does not connect cuts the music with force and gives the turn back', async () => {
    const warm: WarmTransferCarrier = {
      holdAudio: async () => new Int16Array(8),
      consult: async () => undefined,
      bridge: async () => undefined,
    };
    const s = setup({ cold: async () => undefined, warm, transfer: { mode: 'warm' } });
    s.flow.start('transfer_call', TO);
    await settle();
    expect(s.log).toEqual(['line played', 'hold music, interruptible: false']);
    s.flow.consultFailed('nobody answered');
    expect(s.log.at(-1)).toBe('voice cut with force');
    expect(s.intents.at(-1)).toEqual({ kind: 'give_back', note: expect.stringContaining('nobody answered') });
  });

  it('a warm transfer_call on a line that only transfers cold is done cold', async () => {
    const asked: string[] = [];
    const s = setup({ cold: async (to) => void asked.push(to), transfer: { mode: 'warm' } });
    s.flow.start('transfer_call', TO);
    await settle();
    expect(asked).toEqual([TO]);
    expect(s.log).not.toContain('hold music, interruptible: false');
  });

  it('the caller hanging up while being transferred ends user_hangup; once the call is no longer live, the carrier is not listened to', async () => {
    const s = setup({ cold: async () => undefined });
    s.flow.start('transfer_call', TO);
    await settle();
    s.flow.carrierEnded();
    expect(s.intents.at(-1)).toEqual({
      kind: 'end',
      reason: 'user_hangup',
      message: `The caller hung up while being transferred to ${TO}.`,
    });
    s.host.live = false;
    const before = s.intents.length;
    s.flow.answered();
    expect(s.flow.failed('busy')).toBe(false);
    expect(s.intents).toHaveLength(before);
  });
});
