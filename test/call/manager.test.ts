// The call manager leases a call's speech engines from the provider: held while the call runs,
// given back once its session has finished, and given back too when the session cannot be built.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CallRecordSchema } from '../../src/records/record.ts';
import type { EngineLease, SpeechEngineProvider } from '../../src/speech/types.ts';
import { stubSpeechEngines } from '../../bench/stub-engines.ts';
import { placeInboundCall } from '../helpers/phone.ts';
import { startTestService, type TestService } from '../helpers/service.ts';

/** A provider of stub engines that counts the leases it hands out and those still held. */
function countingProvider() {
  const stub = stubSpeechEngines();
  const counts = { sttLeased: 0, ttsLeased: 0, sttHeld: 0, ttsHeld: 0 };
  /** Voices at this speed cannot be made, as a misconfigured engine could not. */
  const brokenSpeed = 2;
  const counted = <E>(lease: EngineLease<E>, kind: 'stt' | 'tts'): EngineLease<E> => {
    counts[`${kind}Leased`]++;
    counts[`${kind}Held`]++;
    let released = false;
    return {
      engine: lease.engine,
      release() {
        if (released) return;
        released = true;
        counts[`${kind}Held`]--;
        lease.release();
      },
    };
  };
  const provider: SpeechEngineProvider = {
    vad: stub.vad,
    stt: (config) => counted(stub.stt(config), 'stt'),
    tts: (config) => {
      if (config.speed === brokenSpeed) throw new Error('no such voice');
      return counted(stub.tts(config), 'tts');
    },
    close: () => stub.close(),
  };
  return { provider, counts, brokenSpeed };
}

const NUMBER = '+15550300001';
let speech: ReturnType<typeof countingProvider>;
let t: TestService;

// A service per test: each counts leases from zero and owns the agent's number.
beforeEach(async () => {
  speech = countingProvider();
  t = await startTestService({}, { speech: speech.provider });
}, 60_000);
afterEach(async () => t?.stop());

async function agent(voice: Record<string, unknown>): Promise<void> {
  const llm = { base_url: 'http://127.0.0.1:9/v1', model: 'never-asked' };
  const res = await t.request('POST', '/v2/agents', {
    body: { agent_id: 'leases', agent_name: 'leases', begin_message: 'Hi.', llm, voice, inbound_numbers: [NUMBER] },
  });
  expect(res.status, res.text).toBe(201);
}

async function until(check: () => boolean | Promise<boolean>, what: string): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`never: ${what}`);
}

async function callStatus(callId: string): Promise<string> {
  return CallRecordSchema.parse((await t.request('GET', `/v2/calls/${callId}`)).body).call_status;
}

describe('CallManager engine leases', () => {
  it('a call holds its recogniser and voice while it runs and releases both once its session has finished', async () => {
    await agent({});
    const before = { ...speech.counts };
    const { caller, callId } = await placeInboundCall(t.url, NUMBER);
    await until(async () => (await callStatus(callId)) === 'ongoing', 'the call connected');
    expect(speech.counts.sttLeased).toBe(before.sttLeased + 1);
    expect(speech.counts.ttsLeased).toBe(before.ttsLeased + 1);
    expect(speech.counts.sttHeld).toBe(before.sttHeld + 1);
    expect(speech.counts.ttsHeld).toBe(before.ttsHeld + 1);
    await caller.hangUp();
    await until(async () => (await callStatus(callId)) === 'ended', 'the call ended');
    await until(
      () => speech.counts.sttHeld === before.sttHeld && speech.counts.ttsHeld === before.ttsHeld,
      'the leases were released',
    );
  }, 30_000);

  it('a session that cannot be built releases the lease it already took, and its call ends as error_service instead of staying registered', async () => {
    await agent({ speed: speech.brokenSpeed });
    const before = { ...speech.counts };
    const { caller, callId } = await placeInboundCall(t.url, NUMBER);
    await caller.waitForClose();
    await until(async () => (await callStatus(callId)) === 'error', 'the call ended as an error');
    expect(CallRecordSchema.parse((await t.request('GET', `/v2/calls/${callId}`)).body).disconnection_reason).toBe(
      'error_service',
    );
    // Recognisers are leased on first use (call/provider-chains.ts): none was before the voice failed, none stays held.
    expect(speech.counts.sttLeased).toBe(before.sttLeased);
    expect(speech.counts.ttsLeased).toBe(before.ttsLeased);
    expect(speech.counts.sttHeld).toBe(before.sttHeld);
    expect(t.logs.some((line) => line.includes('call failed to start'))).toBe(true);
  }, 30_000);
});
