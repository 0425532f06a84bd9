import pino from 'pino';
import { describe, expect, it } from 'vitest';
import type { AgentVoice } from '../../../src/call/agent/agent-voice.ts';
import type { Utterance } from '../../../src/call/agent/utterance.ts';
import type { CallTransport, TransportHandlers } from '../../../src/call/transport.ts';
import { WarmTransfer, type WarmTransferCarrier } from '../../../src/call/transfer/warm-transfer.ts';
import { settle } from '../../helpers/session-fakes.ts';

/** The parts of AgentVoice a warm transfer uses, recording what it was asked. */
function fakeVoice(log: string[], name: string): AgentVoice {
  const pending = new Promise<boolean>(() => undefined);
  const voice = {
    play: () => {
      log.push(`${name}: hold`);
      return { done: pending } as unknown as Utterance;
    },
    sayAll: (text: string) => {
      log.push(`${name}: ${text}`);
      return { done: Promise.resolve(true) } as unknown as Utterance;
    },
    finished: async () => undefined,
    stop: () => log.push(`${name}: stopped`),
    mark: () => undefined,
  };
  return voice as unknown as AgentVoice;
}

function fakeLine(log: string[]): CallTransport & { handlers: TransportHandlers | null } {
  return {
    kind: 'twilio',
    handlers: null,
    attach(handlers) {
      this.handlers = handlers;
    },
    sendAudio: () => undefined,
    sendMark: () => undefined,
    clear: () => undefined,
    notify: () => undefined,
    close: (reason) => log.push(`leg closed: ${reason}`),
  };
}

function transfer(
  carrier: Partial<WarmTransferCarrier> = {},
  summary: () => Promise<string> = async () => 'I have a caller for you.',
) {
  const log: string[] = [];
  const outcome: { connected?: string; failed?: string } = {};
  const warm = new WarmTransfer({
    to: '+14155550199',
    carrier: {
      holdAudio: async () => new Int16Array(8),
      consult: async (to) => void log.push(`consult ${to}`),
      bridge: async () => void log.push('bridge'),
      ...carrier,
    },
    voice: fakeVoice(log, 'caller'),
    consultVoice: () => fakeVoice(log, 'leg'),
    summary,
    log: pino({ level: 'silent' }),
    connected: (summary) => (outcome.connected = summary),
    failed: (why) => (outcome.failed = why),
  });
  return { warm, log, outcome };
}

describe('WarmTransfer', () => {
  it('holds the caller, calls the destination, says the summary on its leg, then bridges: connected with the summary', async () => {
    const { warm, log, outcome } = transfer();
    await warm.start();
    await warm.answered(fakeLine(log));
    expect(log).toEqual([
      'caller: hold',
      'consult +14155550199',
      'leg: I have a caller for you.',
      'bridge',
      'leg: stopped',
    ]);
    expect(outcome).toEqual({ connected: 'I have a caller for you.' });
  });

  it('fails, letting the leg go, when the person who answered hangs up before the bridge; a leg closing as it is bridged is the bridge', async () => {
    const early = transfer({}, () => new Promise(() => undefined));
    await early.warm.start();
    const line = fakeLine(early.log);
    void early.warm.answered(line);
    await settle();
    line.handlers!.hangup();
    expect(early.outcome).toEqual({ failed: 'the person who answered hung up' });
    expect(early.log).toContain('leg closed: call_transfer');

    const bridging = transfer({ bridge: () => new Promise(() => undefined) });
    await bridging.warm.start();
    const bridged = fakeLine(bridging.log);
    void bridging.warm.answered(bridged);
    await settle();
    expect(bridging.warm.bridging).toBe(true);
    bridged.handlers!.hangup();
    expect(bridging.outcome).toEqual({});
  });

  it('fails when the carrier cannot call the destination or cannot bridge', async () => {
    const refused = transfer({ consult: async () => Promise.reject(new Error('503')) });
    await refused.warm.start();
    expect(refused.outcome).toEqual({ failed: 'the phone line could not call them' });
    const unbridged = transfer({ bridge: async () => Promise.reject(new Error('404')) });
    await unbridged.warm.start();
    await unbridged.warm.answered(fakeLine(unbridged.log));
    expect(unbridged.outcome).toEqual({ failed: 'the phone line could not connect them' });
  });
});
