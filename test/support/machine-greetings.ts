// The answering-machine detection set: recorded greetings of machines (several voices, long and
// short, with and without a beep) and the first words of people answering a phone ("Hello?", a
// name, silence then hello, the caller fixtures), spoken by the flite voices on the phone path
// (8 kHz μ-law), and the detector run on each with the real VAD and recogniser, as a call does.
import { readFileSync } from 'node:fs';
import { muLawDecode, muLawEncode } from '../../src/audio/g711.ts';
import { concatPcm, silence } from '../../src/audio/pcm.ts';
import { resample } from '../../src/audio/resampler.ts';
import { decodeWav } from '../../src/audio/wav.ts';
import { AnsweringMachineDetector, type Answerer } from '../../src/call/caller/answering-machine.ts';
import type { MoonshineEngine } from '../../src/speech/stt/moonshine/engine.ts';
import { FliteTtsEngine } from '../../src/speech/tts/flite.ts';
import type { SileroVadEngine } from '../../src/speech/vad/silero.ts';
import { fixtures } from './test-sets.ts';

const RATE = 8000;
const FRAME = RATE / 50;

export interface Greeting {
  name: string;
  truth: 'machine' | 'human';
  audio: Int16Array;
  /** ms into `audio` where the spoken greeting (not the beep) ends. */
  greetingEndMs: number;
}

const MACHINE_TEXTS = [
  {
    id: 'long-beep',
    text: "Hi, you've reached Sam Taylor. I can't take your call right now. Please leave a message after the tone.",
    beepHz: 1000,
  },
  {
    id: 'long',
    text: 'Hello, this is the voicemail of Jordan Lee. Leave your name and number and I will get back to you as soon as I can.',
    beepHz: null,
  },
  { id: 'short-beep', text: 'Please leave a message.', beepHz: 850 },
  {
    id: 'carrier-beep',
    text: 'The person you are calling is not available. Please record your message after the tone.',
    beepHz: 440,
  },
] as const;
const MACHINE_SHORT = [
  { id: 'name-beep', text: "Hi, it's Ann.", beepHz: 1400 },
  { id: 'missed', text: 'Sorry I missed your call, leave me a message.', beepHz: null },
] as const;
const HUMAN_TEXTS = [
  { id: 'hello', text: 'Hello?', voices: ['slt', 'rms', 'awb', 'kal'], leadMs: 300 },
  { id: 'who', text: 'Yeah, who is this?', voices: ['slt', 'kal'], leadMs: 300 },
  { id: 'name', text: 'Hi, this is John.', voices: ['rms', 'awb'], leadMs: 300 },
  { id: 'speaking', text: 'Hello, Maria speaking.', voices: ['slt', 'awb'], leadMs: 300 },
  { id: 'late-hello', text: 'Hello?', voices: ['rms', 'kal'], leadMs: 2_500 },
] as const;
/** Caller fixtures a person might open with. */
const HUMAN_FIXTURES = [
  '22-hold-on-a-second',
  '16-sorry-could-you-repeat',
  '01-my-name-is-john',
  '11-can-i-speak-to',
  '04-yes-please',
];
const VOICES = ['slt', 'rms', 'awb', 'kal'] as const;

function beep(hz: number, ms: number): Int16Array {
  const n = (RATE * ms) / 1000;
  return Int16Array.from({ length: n }, (_, i) => Math.round(9000 * Math.sin((2 * Math.PI * hz * i) / RATE)));
}

/** As the phone line delivers it: 8 kHz through μ-law. */
const phoneLine = (pcm: Int16Array) => muLawDecode(muLawEncode(pcm));

async function speak(tts: FliteTtsEngine, text: string, voice: string): Promise<Int16Array> {
  const chunks: Int16Array[] = [];
  for await (const chunk of tts.synthesize(text, { sampleRate: 16000, voiceId: voice })) chunks.push(chunk.samples);
  return resample(concatPcm(chunks), 16000, RATE);
}

/**
 * Builds the set: 20 machine greetings and 17 people answering (deterministic: flite gives the same audio each run).
 */
export async function machineGreetingSet(): Promise<Greeting[]> {
  const tts = new FliteTtsEngine();
  const set: Greeting[] = [];
  const lead = silence(300, RATE);
  const tail = silence(4_000, RATE);
  try {
    const machine = async (id: string, text: string, voice: string, beepHz: number | null) => {
      const words = await speak(tts, text, voice);
      const parts = [lead, words, ...(beepHz ? [silence(400, RATE), beep(beepHz, 500)] : []), tail];
      set.push({
        name: `machine ${id} ${voice}`,
        truth: 'machine',
        audio: phoneLine(concatPcm(parts)),
        greetingEndMs: ((lead.length + words.length) / RATE) * 1000,
      });
    };
    for (const m of MACHINE_TEXTS) for (const voice of VOICES) await machine(m.id, m.text, voice, m.beepHz);
    for (const m of MACHINE_SHORT) for (const voice of ['slt', 'awb']) await machine(m.id, m.text, voice, m.beepHz);
    for (const h of HUMAN_TEXTS) {
      for (const voice of h.voices) {
        const words = await speak(tts, h.text, voice);
        const leadIn = silence(h.leadMs, RATE);
        set.push({
          name: `human ${h.id} ${voice}`,
          truth: 'human',
          audio: phoneLine(concatPcm([leadIn, words, tail])),
          greetingEndMs: ((leadIn.length + words.length) / RATE) * 1000,
        });
      }
    }
  } finally {
    await tts.close();
  }
  for (const prefix of HUMAN_FIXTURES) {
    const fixture = fixtures().find((f) => f.sampleRate === RATE && f.file.startsWith(prefix))!;
    const words = decodeWav(readFileSync(fixture.path), RATE).samples;
    set.push({
      name: `human ${prefix}`,
      truth: 'human',
      audio: concatPcm([lead, words, tail]),
      greetingEndMs: ((lead.length + words.length) / RATE) * 1000,
    });
  }
  return set;
}

export interface Detection {
  greeting: Greeting;
  answerer: Answerer | null;
  /** For a machine: when it was known, ms after its spoken greeting ended (negative: before). */
  afterGreetingMs: number | null;
}

/**
 * Runs the detector over one greeting frame by frame with the real Silero VAD, handing it each
 * stretch of speech and, when a stretch ends, the recogniser's words for it, as a call does.
 */
export async function detect(
  greeting: Greeting,
  engines: { vad: SileroVadEngine; stt: MoonshineEngine },
): Promise<Detection> {
  let answerer: Answerer | null = null;
  const detector = new AnsweringMachineDetector(RATE, 30_000, {
    decided: (a) => (answerer ??= a),
    beep: () => undefined,
  });
  const vad = await engines.vad.open({ sampleRate: RATE });
  let speechFrom = 0;
  try {
    for (let i = 0; i + FRAME <= greeting.audio.length && !answerer; i += FRAME) {
      const frame = greeting.audio.subarray(i, i + FRAME);
      const atMs = (i / RATE) * 1000;
      detector.audio(frame, atMs);
      for (const event of await vad.push(frame)) {
        if (event.type === 'speech_start') {
          speechFrom = Math.max(0, Math.round(event.at * RATE) - FRAME * 5);
          detector.speechStarted(event.at * 1000);
        } else {
          detector.speechEnded(event.at * 1000);
          const words = await engines.stt.transcribe(
            greeting.audio.slice(speechFrom, Math.round(event.at * RATE)),
            RATE,
          );
          detector.words(words, atMs);
        }
      }
      // The VAD has judged this frame, as a call then tells the detector.
      detector.judged(((i + FRAME) / RATE) * 1000);
    }
  } finally {
    vad.close();
  }
  const decided = answerer as Answerer | null;
  return {
    greeting,
    answerer: decided,
    afterGreetingMs: decided?.by === 'machine' ? decided.atMs - greeting.greetingEndMs : null,
  };
}
