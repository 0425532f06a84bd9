// A decoder worker thread: owns native decoders (one per open stream, reused across that
// stream's utterances so cepstral mean normalisation keeps adapting to the caller), feeds them
// audio and answers finalize with the hypothesis and word timings. Everything blocking lives here.
import { parentPort } from 'node:worker_threads';
import { BandwidthProbe, type Bandwidth } from '../../../audio/bandwidth.ts';
import { Resampler } from '../../../audio/resampler.ts';
import type { SttResult, WordTiming } from '../../types.ts';
import { loadDecoderClass, type NativeDecoder, type NativeSegment } from './addon.ts';
import { CMN_ADAPTATION, MODEL_DEFAULTS, type ModelSpec } from './models.ts';
import { hintGrammar, hintWins, searchablePhrases } from './phrases.ts';
import type { FromWorker, ToWorker } from './protocol.ts';

interface StreamState {
  decoder: NativeDecoder;
  modelKey: string;
  resampler: Resampler | null;
  inUtt: boolean;
  /** 16 kHz samples fed into this stream so far: the clock of word timings. */
  samplesFed: number;
  uttStartSample: number;
  samplesSincePartial: number;
  partialEverySamples: number;
  lastPartial: string;
  /** Second decoder searching only the agent's phrase hints, when it has any. */
  hints: { decoder: NativeDecoder; modelKey: string } | null;
  phrases: string[];
  /** Samples fed to the current decoder: the clock of its channel adaptation. */
  decoderSamples: number;
  /** A wideband stream still listening whether its caller is narrowband. */
  band: BandCheck | null;
}

interface BandCheck {
  probe: BandwidthProbe;
  /** Decodes the stream from the verdict on if it is narrowband. */
  model: ModelSpec;
  /** This utterance's audio, replayed into the other model's decoder on a switch. */
  audio: Int16Array[];
  audioSamples: number;
}

/** A caller quiet this long (no verdict yet) stays with the model it has: the replay would cost too much. */
const BAND_CHECK_MAX_SAMPLES = MODEL_DEFAULTS.sampleRate * 10;

const port = parentPort;
if (!port) throw new Error('worker.ts runs only as a worker thread');

const streams = new Map<number, StreamState>();
// Decoders take ~0.5 s to load; keep released ones per model for the next call.
const idle = new Map<string, NativeDecoder[]>();
// The model's starting cepstral mean (its feat.params -cmninit), read from a fresh decoder.
const initialCmn = new WeakMap<NativeDecoder, number[]>();

function send(msg: FromWorker): void {
  port?.postMessage(msg);
}

function modelKey(model: ModelSpec): string {
  return model.args.join('\u0000');
}

function takeDecoder(model: ModelSpec): NativeDecoder {
  const pooled = idle.get(modelKey(model))?.pop();
  if (pooled) return pooled;
  const Decoder = loadDecoderClass();
  const decoder = new Decoder(model.args);
  const cmn = decoder.cmn();
  if (cmn) initialCmn.set(decoder, cmn.mean);
  return decoder;
}

/** Forget the previous caller's channel: start from the model's mean, lightly weighted. */
function resetCmn(decoder: NativeDecoder): void {
  const mean = initialCmn.get(decoder);
  if (mean) decoder.setCmn(mean, CMN_ADAPTATION.priorFrames);
}

function release(key: string, decoder: NativeDecoder): void {
  const list = idle.get(key) ?? [];
  list.push(decoder);
  idle.set(key, list);
}

/** The model without its language model: a hint decoder only ever searches a grammar. */
function grammarModel(model: ModelSpec): ModelSpec {
  const args: string[] = [];
  for (let i = 0; i < model.args.length; i += 2) {
    if (model.args[i] !== '-lm') args.push(model.args[i] ?? '', model.args[i + 1] ?? '');
  }
  return { name: model.name, args };
}

function hintDecoder(model: ModelSpec, phrases: string[]): StreamState['hints'] {
  const searchable = searchablePhrases(phrases);
  if (searchable.length === 0) return null;
  const spec = grammarModel(model);
  const decoder = takeDecoder(spec);
  decoder.setJsgf('hints', hintGrammar(searchable));
  decoder.setSearch('hints');
  return { decoder, modelKey: modelKey(spec) };
}

interface StreamDecoders {
  decoder: NativeDecoder;
  hints: StreamState['hints'];
}

/**
 * A stream's decoders for `model`: the open search and, with phrases, the hint search, each with
 * the channel mean reset. Throws when a model cannot be loaded, handing back what it took.
 */
function takeDecoders(model: ModelSpec, phrases: string[]): StreamDecoders {
  const decoder = takeDecoder(model);
  let hints: StreamState['hints'];
  try {
    hints = hintDecoder(model, phrases);
  } catch (err) {
    release(modelKey(model), decoder);
    throw err;
  }
  resetCmn(decoder);
  if (hints) resetCmn(hints.decoder);
  return { decoder, hints };
}

const FILLER = /^(<s>|<\/s>|<sil>|\[[a-z_]+\]|\+\+.*\+\+)$/i;

/** "word(2)" is the second pronunciation of "word". */
function cleanWord(word: string): string {
  return word.replace(/\(\d+\)$/, '');
}

function wordsOf(segments: NativeSegment[], frameRate: number, uttStartSec: number): WordTiming[] {
  // Segment frames count from an origin that drifts across utterances in this library
  // version; the utterance's <s> (always at its first frame) gives it.
  const first = segments[0];
  const origin = first && first.word === '<s>' ? first.start : 0;
  return segments
    .filter((s) => !FILLER.test(s.word))
    .map((s) => ({
      word: cleanWord(s.word),
      start: uttStartSec + (s.start - origin) / frameRate,
      end: uttStartSec + (s.end + 1 - origin) / frameRate,
    }));
}

/** Into the stream's decoders (the open search and the hints), adapting the channel mean as they go. */
function decode(st: StreamState, pcm: Int16Array): void {
  st.decoder.processRaw(pcm);
  st.hints?.decoder.processRaw(pcm);
  st.decoderSamples += pcm.length;
  adaptCmn(st, st.decoderSamples - pcm.length);
}

function feed(sid: number, st: StreamState, input: Int16Array): void {
  const pcm = st.resampler ? st.resampler.push(input) : input;
  if (pcm.length === 0) return;
  if (!st.inUtt) {
    st.hints?.decoder.startUtt();
    st.decoder.startUtt();
    st.inUtt = true;
    st.uttStartSample = st.samplesFed;
    st.lastPartial = '';
    if (st.band) {
      st.band.audio = [];
      st.band.audioSamples = 0;
    }
  }
  decode(st, pcm);
  st.samplesFed += pcm.length;
  if (st.band) listenForBand(st, pcm);
  st.samplesSincePartial += pcm.length;
  if (st.samplesSincePartial >= st.partialEverySamples) {
    st.samplesSincePartial = 0;
    const text = cleanText(st.decoder.hyp()?.text ?? '');
    if (text !== st.lastPartial) {
      st.lastPartial = text;
      send({ ev: 'partial', sid, text });
    }
  }
}

const SAMPLES_PER_FRAME = MODEL_DEFAULTS.sampleRate / 100;

function listenForBand(st: StreamState, pcm: Int16Array): void {
  const band = st.band!;
  // The worker's own chunk (a message's copy or the resampler's fresh output): kept, not copied.
  band.audio.push(pcm);
  band.audioSamples += pcm.length;
  const verdict = band.probe.push(pcm);
  if (verdict) settleBand(st, verdict);
  else if (band.audioSamples > BAND_CHECK_MAX_SAMPLES) st.band = null;
}

/**
 * Narrowband speech goes to the telephone variant from here on: this utterance is replayed into
 * its decoder (a few hundred ms of audio, once per call), and the general decoder goes back to
 * the pool. If the variant cannot be loaded the stream keeps the model it has.
 */
function settleBand(st: StreamState, verdict: Bandwidth): void {
  const band = st.band;
  st.band = null;
  if (!band || verdict === 'wide') return;
  let decoders: StreamDecoders;
  try {
    decoders = takeDecoders(band.model, st.phrases);
  } catch {
    return;
  }
  const { decoder, hints } = decoders;
  if (st.inUtt) {
    st.decoder.endUtt();
    st.hints?.decoder.endUtt();
  }
  release(st.modelKey, st.decoder);
  if (st.hints) release(st.hints.modelKey, st.hints.decoder);
  st.decoder = decoder;
  st.modelKey = modelKey(band.model);
  st.hints = hints;
  st.decoderSamples = 0;
  if (!st.inUtt) return;
  st.decoder.startUtt();
  st.hints?.decoder.startUtt();
  for (const chunk of band.audio) decode(st, chunk);
}

/** Re-estimate the channel mean each time another `updateEveryFrames` frames of this caller were fed. */
function adaptCmn(st: StreamState, fedBefore: number): void {
  const framesBefore = fedBefore / SAMPLES_PER_FRAME;
  if (framesBefore >= CMN_ADAPTATION.fastUntilFrames) return;
  const period = CMN_ADAPTATION.updateEveryFrames;
  if (Math.floor(st.decoderSamples / SAMPLES_PER_FRAME / period) === Math.floor(framesBefore / period)) return;
  st.decoder.updateCmn();
  st.hints?.decoder.updateCmn();
}

function cleanText(text: string): string {
  return text
    .split(/\s+/)
    .filter((w) => w && !FILLER.test(w))
    .map(cleanWord)
    .join(' ');
}

function finish(st: StreamState): SttResult {
  if (st.resampler) {
    const tail = st.resampler.flush();
    if (tail.length > 0 && st.inUtt) {
      decode(st, tail);
      st.samplesFed += tail.length;
      if (st.band) listenForBand(st, tail);
    }
    st.resampler.reset();
  }
  if (!st.inUtt) return { text: '', words: [] };
  // A short first utterance may end before the verdict: judge on what it had, if enough.
  if (st.band) {
    const verdict = st.band.probe.settle();
    if (verdict) settleBand(st, verdict);
  }
  st.decoder.endUtt();
  st.hints?.decoder.endUtt();
  st.inUtt = false;
  st.samplesSincePartial = 0;
  const uttStartSec = st.uttStartSample / MODEL_DEFAULTS.sampleRate;
  let chosen = st.decoder;
  if (st.hints) {
    const general = st.decoder.hyp();
    const hint = st.hints.decoder.hyp();
    if (
      hint &&
      hintWins(
        { text: cleanText(general?.text ?? ''), score: general?.score ?? -Infinity },
        { text: cleanText(hint.text), score: hint.score },
      )
    ) {
      chosen = st.hints.decoder;
    }
  }
  const words = wordsOf(chosen.segments(), chosen.frameRate(), uttStartSec);
  return { text: words.map((w) => w.word).join(' '), words };
}

function handle(msg: ToWorker): void {
  switch (msg.op) {
    case 'open': {
      let decoders: StreamDecoders;
      try {
        decoders = takeDecoders(msg.model, msg.phrases);
      } catch (err) {
        send({ ev: 'error', sid: msg.sid, req: msg.req, code: 'STT_MODEL_INVALID', message: (err as Error).message });
        return;
      }
      const { decoder, hints } = decoders;
      streams.set(msg.sid, {
        decoder,
        modelKey: modelKey(msg.model),
        resampler:
          msg.sampleRate === MODEL_DEFAULTS.sampleRate
            ? null
            : new Resampler(msg.sampleRate, MODEL_DEFAULTS.sampleRate),
        inUtt: false,
        samplesFed: 0,
        uttStartSample: 0,
        samplesSincePartial: 0,
        partialEverySamples: Math.max(1, Math.round((msg.partialEveryMs / 1000) * MODEL_DEFAULTS.sampleRate)),
        lastPartial: '',
        hints,
        phrases: msg.phrases,
        decoderSamples: 0,
        band: msg.narrowbandModel
          ? {
              probe: new BandwidthProbe({ sampleRate: MODEL_DEFAULTS.sampleRate }),
              model: msg.narrowbandModel,
              audio: [],
              audioSamples: 0,
            }
          : null,
      });
      send({ ev: 'ok', sid: msg.sid, req: msg.req });
      return;
    }
    case 'audio': {
      const st = streams.get(msg.sid);
      if (st) feed(msg.sid, st, msg.samples);
      return;
    }
    case 'finalize': {
      const st = streams.get(msg.sid);
      send({ ev: 'final', sid: msg.sid, req: msg.req, result: st ? finish(st) : { text: '', words: [] } });
      return;
    }
    case 'cancel': {
      const st = streams.get(msg.sid);
      if (st?.inUtt) {
        st.decoder.endUtt();
        st.hints?.decoder.endUtt();
        st.inUtt = false;
      }
      st?.resampler?.reset();
      return;
    }
    case 'close': {
      const st = streams.get(msg.sid);
      if (st) {
        if (st.inUtt) {
          st.decoder.endUtt();
          st.hints?.decoder.endUtt();
        }
        streams.delete(msg.sid);
        release(st.modelKey, st.decoder);
        if (st.hints) release(st.hints.modelKey, st.hints.decoder);
      }
      send({ ev: 'ok', sid: msg.sid, req: msg.req });
      return;
    }
    case 'crash':
      return;
  }
}

port.on('message', (msg: ToWorker) => {
  // An uncaught throw ends this thread only, as a fault in the decoder would.
  if (msg.op === 'crash') throw new Error('simulated decoder crash');
  try {
    handle(msg);
  } catch (err) {
    const sid = 'sid' in msg ? msg.sid : -1;
    const req = 'req' in msg ? msg.req : null;
    send({ ev: 'error', sid, req, code: 'STT_ENGINE_CRASHED', message: (err as Error).message });
  }
});
