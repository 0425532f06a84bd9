// Per-frame hot paths the other benches do not cover: Twilio message parse and build, the
// carrier audio edge (μ-law 8 kHz → PCM16 at 8 kHz, as a phone call now runs, and ↔ 16 kHz),
// and a CallSession's work for one inbound frame (ManualTimers, fake engines; VAD drained).
// Run: npm run bench (all benches)
import { Bench } from 'tinybench';
import { AgentConfigSchema } from '../src/agents/schema.ts';
import { CarrierAudioIn, CarrierAudioOut } from '../src/audio/telephony.ts';
import { muLawEncode } from '../src/audio/g711.ts';
import { CallSession } from '../src/call/session.ts';
import { ManualTimers } from '../src/timers.ts';
import {
  parseTwilioMessage,
  TWILIO_MEDIA_SUFFIX,
  twilioMedia,
  twilioMediaPrefix,
} from '../src/carriers/twilio/media-protocol.ts';
import {
  EnergyVad,
  FakeTransport,
  ScriptedStt,
  SPEECH,
  engines,
  frame,
  settle,
  silentLog,
} from '../test/helpers/session-fakes.ts';
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
const carrierIn8k = new CarrierAudioIn({ internalRate: 8000 });
const carrierOut = new CarrierAudioOut();
const mediaPrefix = twilioMediaPrefix(streamSid);

/** A live session with fake engines; `speaking` puts the caller mid-utterance (recogniser fed). */
async function liveSession(speaking: boolean, rate: 8000 | 16000 = 16000): Promise<(f: Int16Array) => void> {
  const timers = new ManualTimers(1_700_000_000_000);
  const transport = new FakeTransport(timers, rate);
  const session = new CallSession({
    callId: 'call_bench',
    agent: AgentConfigSchema.parse({
      agent_name: 'Bench',
      llm: { base_url: 'http://127.0.0.1:9/v1', model: 'm' },
      begin_message: '',
    }),
    systemPrompt: 'bench',
    transport,
    timers,
    engines: engines(new ScriptedStt([]), undefined, new EnergyVad(rate)),
    brain: { respond: async () => ({ kind: 'reply', messages: [] }) },
    // 16 kHz: a browser-like line feeding an 8 kHz recogniser through a resampler; 8 kHz: a phone line, fed as it is.
    sttSampleRate: 8000,
    log: silentLog,
    onEnd: () => undefined,
  });
  await session.start();
  if (speaking) {
    transport.handlers.audio(frame(SPEECH, rate));
    await settle();
  }
  return (f) => transport.handlers.audio(f);
}

const silentCall = await liveSession(false);
const talkingCall = await liveSession(true);
const phoneCall = await liveSession(true, 8000);
const quiet = frame(0);
const loud = frame(SPEECH);
const loud8k = frame(SPEECH, 8000);
// Enough microtask turns for the session's VAD chain (push → events → catch) to settle.
const drain = async () => {
  for (let i = 0; i < 8; i++) await Promise.resolve();
};

const bench = new Bench({ time: 500, warmup: true });
bench
  .add("Twilio media message parse (Twilio's layout: one regex)", () => void parseTwilioMessage(inboundText))
  .add('Twilio media message parse (other layout: JSON + hand check)', () => void parseTwilioMessage(` ${inboundText}`))
  .add(
    'Twilio media message build (base64 + JSON)',
    () => void twilioMedia(streamSid, Buffer.from(ulaw).toString('base64')),
  )
  .add(
    'Twilio media message build, as the transport does (encode + base64 + prefix)',
    () => void (mediaPrefix + Buffer.from(muLawEncode(pcm8k)).toString('base64') + TWILIO_MEDIA_SUFFIX),
  )
  .add('carrier in: μ-law 20 ms → PCM16 8 kHz frame (a phone call)', () => void carrierIn8k.push(ulaw))
  .add('carrier in: μ-law 20 ms → PCM16 16 kHz frames', () => void carrierIn.push(ulaw))
  .add('carrier out: PCM16 16 kHz 20 ms → μ-law frames', () => void carrierOut.push(pcm16k))
  .add('microtask drain alone (baseline for the session rows)', drain)
  .add('session per inbound frame: silence (VAD chain drained)', async () => {
    silentCall(quiet);
    await drain();
  })
  .add('session per inbound frame: speech 16 kHz → STT 8 kHz (VAD drained)', async () => {
    talkingCall(loud);
    await drain();
  })
  .add('session per inbound frame: phone line, speech 8 kHz → STT 8 kHz (VAD drained)', async () => {
    phoneCall(loud8k);
    await drain();
  });
await bench.run();
console.table(taskRows(bench));
