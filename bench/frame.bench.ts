// Per-frame hot paths the other benches do not cover: Twilio message parse and build, the
// carrier audio edge (μ-law 8 kHz ↔ PCM16 16 kHz), and a CallSession's work for one inbound
// frame (ManualTimers, fake engines; VAD promise chain drained). Run: npm run bench (all benches)
import { Bench } from 'tinybench';
import { AgentConfigSchema } from '../src/agents/schema.ts';
import { CarrierAudioIn, CarrierAudioOut } from '../src/audio/telephony.ts';
import { muLawEncode } from '../src/audio/g711.ts';
import { CallSession } from '../src/call/session.ts';
import { ManualTimers } from '../src/call/timers.ts';
import { parseTwilioMessage, twilioMedia } from '../src/transports/twilio/protocol.ts';
import { FakeTransport, ScriptedStt, SPEECH, engines, frame, settle, silentLog } from '../test/helpers/session-fakes.ts';
import { taskRows } from './report.ts';

const pcm8k = Int16Array.from({ length: 160 }, (_, i) => Math.round(8000 * Math.sin((2 * Math.PI * 440 * i) / 8000)));
const ulaw = muLawEncode(pcm8k);
const payload = Buffer.from(ulaw).toString('base64');
const streamSid = `MZ${'a'.repeat(32)}`;
const inboundText = JSON.stringify({
  event: 'media',
  sequenceNumber: '1234',
  media: { track: 'inbound', chunk: '1233', timestamp: '24660', payload },
  streamSid,
});
const pcm16k = Int16Array.from({ length: 320 }, (_, i) => Math.round(8000 * Math.sin((2 * Math.PI * 440 * i) / 16000)));

const carrierIn = new CarrierAudioIn();
const carrierOut = new CarrierAudioOut();

/** A live session with fake engines; `speaking` puts the caller mid-utterance (recogniser fed). */
async function liveSession(speaking: boolean): Promise<(f: Int16Array) => void> {
  const timers = new ManualTimers(1_700_000_000_000);
  const transport = new FakeTransport(timers);
  const session = new CallSession({
    callId: 'call_bench',
    agent: AgentConfigSchema.parse({ agent_name: 'Bench', llm: { base_url: 'http://127.0.0.1:9/v1', model: 'm' }, begin_message: '' }),
    systemPrompt: 'bench',
    transport,
    timers,
    engines: engines(new ScriptedStt([])),
    brain: { respond: async () => ({ kind: 'reply', messages: [] }) },
    sttSampleRate: 8000,
    log: silentLog,
    onEnd: () => undefined,
  });
  await session.start();
  if (speaking) {
    transport.handlers.audio(frame(SPEECH));
    await settle();
  }
  return (f) => transport.handlers.audio(f);
}

const silentCall = await liveSession(false);
const talkingCall = await liveSession(true);
const quiet = frame(0);
const loud = frame(SPEECH);
// Enough microtask turns for the session's VAD chain (push → events → catch) to settle.
const drain = async () => {
  for (let i = 0; i < 8; i++) await Promise.resolve();
};

const bench = new Bench({ time: 500, warmup: true });
bench
  .add('Twilio media message parse (JSON + zod)', () => void parseTwilioMessage(inboundText))
  .add('Twilio media message build (base64 + JSON)', () => void twilioMedia(streamSid, Buffer.from(ulaw).toString('base64')))
  .add('carrier in: μ-law 20 ms → PCM16 16 kHz frames', () => void carrierIn.push(ulaw))
  .add('carrier out: PCM16 16 kHz 20 ms → μ-law frames', () => void carrierOut.push(pcm16k))
  .add('microtask drain alone (baseline for the session rows)', drain)
  .add('session per inbound frame: silence (VAD chain drained)', async () => {
    silentCall(quiet);
    await drain();
  })
  .add('session per inbound frame: speech → STT 8 kHz (VAD chain drained)', async () => {
    talkingCall(loud);
    await drain();
  });
await bench.run();
console.table(taskRows(bench));
