// Moonshine (tiny or base) through onnxruntime-node: an encoder over the whole utterance, then a greedy
// token-by-token decoder that keeps its attention keys and values between steps. A run holds
// the thread that calls it for tens of milliseconds, so only worker threads use this file.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import llamaTokenizer from 'llama-tokenizer-js';
import ort from 'onnxruntime-node';
import { int16ToFloat, rms } from '../../../audio/pcm.ts';
import { SttError } from '../errors.ts';
import { type BiasState, PhraseBias } from './phrase-bias.ts';

export const MOONSHINE_MODEL = {
  sampleRate: 16000,
  files: { encoder: 'encoder_model.onnx', decoder: 'decoder_model_merged.onnx' },
  startToken: 1,
  endToken: 2,
  /** Ids from here on are the model's own special tokens, not text. */
  firstSpecialToken: 32000,
  /** Speech runs ~3 tokens a second; more than this many per second of audio is a loop. */
  maxTokensPerSecond: 6,
  /** Shorter than this there is nothing to recognise (the encoder needs some context). */
  minSamples: 1600,
  /** Quiet kept before the first and after the last loud frame when the utterance is trimmed. */
  trimMarginSamples: 4800,
} as const;

/** The released English models: same tokenizer and file layout, different decoder shapes. */
export const MOONSHINE_SIZES = {
  /** 27 M parameters. */
  tiny: { layers: 6, kvHeads: 8, headDim: 36 },
  /** 61 M parameters: about twice the work per second of audio. */
  base: { layers: 8, kvHeads: 8, headDim: 52 },
} as const;

export type MoonshineSize = keyof typeof MOONSHINE_SIZES;
export const MOONSHINE_SIZE_NAMES = Object.keys(MOONSHINE_SIZES) as MoonshineSize[];

/**
 * The utterance without the quiet before and after its speech (margins kept). The model was
 * trained on segments cut close to speech: two seconds of line silence ahead of a phrase made it
 * end at once with no words. A frame counts as loud from 30 dB under the loudest one.
 */
export function trimSilence(
  samples: Int16Array,
  frame = 320,
  margin: number = MOONSHINE_MODEL.trimMarginSamples,
): Int16Array {
  const levels: number[] = [];
  for (let at = 0; at < samples.length; at += frame) levels.push(rms(samples.subarray(at, at + frame)));
  const floor = Math.max(Math.max(0, ...levels) / 31.6, 1);
  const first = levels.findIndex((l) => l >= floor);
  if (first < 0) return samples.subarray(0, 0);
  const last = levels.findLastIndex((l) => l >= floor);
  return samples.subarray(Math.max(0, first * frame - margin), Math.min(samples.length, (last + 1) * frame + margin));
}

export function missingMoonshineFiles(dir: string): string[] {
  return Object.values(MOONSHINE_MODEL.files)
    .map((f) => join(dir, f))
    .filter((f) => !existsSync(f));
}

type Feeds = Record<string, ort.Tensor>;

function emptyCache(size: MoonshineSize): Feeds {
  const { layers, kvHeads, headDim } = MOONSHINE_SIZES[size];
  const feeds: Feeds = {};
  for (let i = 0; i < layers; i++) {
    for (const part of ['decoder', 'encoder']) {
      for (const kind of ['key', 'value'])
        feeds[`past_key_values.${i}.${part}.${kind}`] = new ort.Tensor('float32', new Float32Array(0), [
          0,
          kvHeads,
          1,
          headDim,
        ]);
    }
  }
  return feeds;
}

/** Log-softmax in place: logits become log-probabilities. */
function logSoftmax(logits: Float32Array): Float32Array {
  let max = -Infinity;
  for (const v of logits) if (v > max) max = v;
  let sum = 0;
  for (const v of logits) sum += Math.exp(v - max);
  const norm = max + Math.log(sum);
  for (let i = 0; i < logits.length; i++) logits[i] = (logits[i] ?? 0) - norm;
  return logits;
}

/** Indices of the `k` largest values, largest first. */
function topK(values: Float32Array, k: number): number[] {
  const best: number[] = [];
  for (let i = 0; i < values.length; i++) {
    const v = values[i] ?? -Infinity;
    if (best.length === k && v <= (values[best[k - 1] ?? 0] ?? -Infinity)) continue;
    let at = best.length;
    while (at > 0 && v > (values[best[at - 1] ?? 0] ?? -Infinity)) at--;
    best.splice(at, 0, i);
    if (best.length > k) best.pop();
  }
  return best;
}

/**
 * A reading no one waits for any more stops between two runs of the model: a guess at a pause the caller spoke on from
 * would otherwise hold its thread for the whole decoding (600–900 ms for ten digits read by the beam), and the turn's
 * real reading would queue behind it.
 */
function stopIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw new SttError('STT_ABORTED', 'transcription cancelled');
}

function output(result: ort.InferenceSession.ReturnType, name: string): ort.Tensor {
  const tensor = result[name];
  if (!tensor) throw new SttError('STT_MODEL_INVALID', `moonshine model gave no "${name}" output`);
  return tensor;
}

interface Hypothesis {
  tokens: number[];
  tokenLogProbs: number[];
  logProb: number;
  /** Phrase-hint bonus held (nats): ranked with `logProb`, never reported as the model's own. */
  bias: number;
  biasState: BiasState | null;
  /** The decoder's attention keys and values after `tokens`; null before the first step. */
  cache: Feeds | null;
}

export interface MoonshineDecoding {
  /** Beam width for an unsure utterance; 1 decodes greedily always. */
  beamWidth: number;
  /** Greedy decoding picked a token this unlikely (natural log): decode again with the beam. */
  fallbackBelowLogProb: number;
}

/**
 * Greedy first; an utterance where greedy picked a token at under e^-1 (37%) is decoded again by
 * a beam of 3. The threshold was chosen on the calibration sentences of
 * scripts/telephone-calibration.ts (not on the test sets): there it sent 19–25% of utterances to
 * the beam and kept nearly all of the beam's gain (WER 10.8 → 9.1% at 16 kHz, 14.4 → 12.4%
 * through the telephone path), while a beam for every utterance costs 3× the decoding.
 */
export const MOONSHINE_DECODING: MoonshineDecoding = { beamWidth: 3, fallbackBelowLogProb: -1 };

export interface MoonshineTranscript {
  text: string;
  /** Of the greedy reading. */
  worstTokenLogProb: number;
  /** Whether the beam search decided the text. */
  beam: boolean;
}

/** Phrase hints as the tokenizer writes them mid-sentence (word-initial pieces). */
export function moonshinePhraseBias(phrases: readonly string[], tokenBonus?: number): PhraseBias {
  return new PhraseBias(phrases, (text) => llamaTokenizer.encode(text, false, true, false), tokenBonus);
}

function decodeTokens(tokens: number[]): string {
  return llamaTokenizer
    .decode(tokens.filter((t) => t > MOONSHINE_MODEL.endToken && t < MOONSHINE_MODEL.firstSpecialToken))
    .trim();
}

export class MoonshineRecogniser {
  private constructor(
    private readonly size: MoonshineSize,
    private readonly encoder: ort.InferenceSession,
    private readonly decoder: ort.InferenceSession,
  ) {}

  /**
   * Loads both sessions of the `size` model in `dir`; one intra-op thread each, since every worker thread runs its own.
   */
  static async load(dir: string, size: MoonshineSize = 'tiny'): Promise<MoonshineRecogniser> {
    const missing = missingMoonshineFiles(dir);
    if (missing.length > 0)
      throw new SttError(
        'STT_MODEL_INVALID',
        `moonshine model files missing (run npm run setup): ${missing.join(', ')}`,
      );
    const options: ort.InferenceSession.SessionOptions = {
      intraOpNumThreads: 1,
      interOpNumThreads: 1,
      graphOptimizationLevel: 'all',
    };
    try {
      const [encoder, decoder] = await Promise.all([
        ort.InferenceSession.create(join(dir, MOONSHINE_MODEL.files.encoder), options),
        ort.InferenceSession.create(join(dir, MOONSHINE_MODEL.files.decoder), options),
      ]);
      return new MoonshineRecogniser(size, encoder, decoder);
    } catch (err) {
      throw new SttError('STT_MODEL_INVALID', `moonshine model did not load: ${(err as Error).message}`, {
        cause: err,
      });
    }
  }

  /** Text of one utterance of 16 kHz PCM16; rejects with STT_ABORTED at the next decoder step once `signal` fires. */
  async transcribe(
    utterance: Int16Array,
    decoding: MoonshineDecoding = MOONSHINE_DECODING,
    bias?: PhraseBias,
    signal?: AbortSignal,
  ): Promise<string> {
    return (await this.transcribeDetailed(utterance, decoding, bias, signal)).text;
  }

  /** The text with how it was decoded: greedy, and by beam search when greedy was unsure of a token. */
  async transcribeDetailed(
    utterance: Int16Array,
    decoding: MoonshineDecoding = MOONSHINE_DECODING,
    bias?: PhraseBias,
    signal?: AbortSignal,
  ): Promise<MoonshineTranscript> {
    const samples = trimSilence(utterance);
    if (samples.length < MOONSHINE_MODEL.minSamples) return { text: '', worstTokenLogProb: 0, beam: false };
    const audio = int16ToFloat(samples);
    stopIfAborted(signal);
    const encoded = await this.encoder.run({ input_values: new ort.Tensor('float32', audio, [1, audio.length]) });
    const hidden = output(encoded, 'last_hidden_state');
    const maxTokens = Math.ceil((samples.length / MOONSHINE_MODEL.sampleRate) * MOONSHINE_MODEL.maxTokensPerSecond) + 2;
    const hints = bias && !bias.empty ? bias : null;
    const greedy = await this.beamSearch(hidden, maxTokens, 1, hints, signal);
    const worstTokenLogProb = Math.min(0, ...greedy.tokenLogProbs);
    // The search starts over from the first token: starting where greedy hesitated kept almost
    // none of the gain, since the wrong word is often one greedy was sure of (measured).
    const unsure = decoding.beamWidth > 1 && worstTokenLogProb < decoding.fallbackBelowLogProb;
    const best = unsure ? await this.beamSearch(hidden, maxTokens, decoding.beamWidth, hints, signal) : greedy;
    return { text: decodeTokens(best.tokens), worstTokenLogProb, beam: unsure };
  }

  /**
   * Beam search with one decoder run per live hypothesis and step (width 1 is greedy). Runs are
   * not batched: the decoder quantises its activations per run, so batched hypotheses score
   * differently from lone ones, and worse (measured). With phrase hints, each hypothesis also
   * tries the hints' next tokens, ranked with their bonus (shallow fusion).
   */
  private async beamSearch(
    hidden: ort.Tensor,
    maxTokens: number,
    width: number,
    bias: PhraseBias | null,
    signal: AbortSignal | undefined,
  ): Promise<Hypothesis> {
    let live: Hypothesis[] = [
      { tokens: [], tokenLogProbs: [], logProb: 0, bias: 0, biasState: bias?.start ?? null, cache: null },
    ];
    const finished: Hypothesis[] = [];
    for (let step = 0; step < maxTokens && live.length > 0 && finished.length < width; step++) {
      const expansions: {
        parent: Hypothesis;
        token: number;
        logProb: number;
        bonus: number;
        biasState: BiasState | null;
        cache: Feeds;
      }[] = [];
      for (const hyp of live) {
        stopIfAborted(signal);
        const past = hyp.cache ?? emptyCache(this.size);
        const result = await this.decoder.run({
          input_ids: new ort.Tensor(
            'int64',
            BigInt64Array.of(BigInt(hyp.tokens.at(-1) ?? MOONSHINE_MODEL.startToken)),
            [1, 1],
          ),
          encoder_hidden_states: hidden,
          // The first step fills the cross-attention cache from the encoder; later steps reuse it.
          use_cache_branch: new ort.Tensor('bool', [step > 0], [1]),
          ...past,
        });
        const logits = output(result, 'logits').data;
        if (!(logits instanceof Float32Array))
          throw new SttError('STT_MODEL_INVALID', 'moonshine logits are not float32');
        const cache: Feeds = {};
        for (const name of Object.keys(past)) {
          // The cross-attention part is computed once, on the first step.
          cache[name] =
            step === 0 || name.includes('.decoder.')
              ? output(result, name.replace('past_key_values', 'present'))
              : (past[name] as ort.Tensor);
        }
        const logProbs = logSoftmax(logits);
        const tokens = new Set(topK(logProbs, width));
        if (bias && hyp.biasState) for (const token of bias.candidates(hyp.biasState)) tokens.add(token);
        for (const token of tokens) {
          const biased =
            bias && hyp.biasState
              ? bias.step(hyp.biasState, token, token === MOONSHINE_MODEL.endToken)
              : { bonus: 0, state: null };
          expansions.push({
            parent: hyp,
            token,
            logProb: logProbs[token] ?? -Infinity,
            bonus: biased.bonus,
            biasState: biased.state,
            cache,
          });
        }
      }
      const score = (e: (typeof expansions)[number]) => e.parent.logProb + e.parent.bias + e.logProb + e.bonus;
      expansions.sort((a, b) => score(b) - score(a));
      live = [];
      for (const { parent, token, logProb, bonus, biasState, cache } of expansions) {
        if (live.length + finished.length >= width) break;
        const next: Hypothesis = {
          tokens: [...parent.tokens, token],
          tokenLogProbs: [...parent.tokenLogProbs, logProb],
          logProb: parent.logProb + logProb,
          bias: parent.bias + bonus,
          biasState,
          cache,
        };
        if (token === MOONSHINE_MODEL.endToken) finished.push(next);
        else live.push(next);
      }
    }
    // Ranked by log-probability per token, so a longer reading is not punished for its length.
    // A phrase match still under way when the tokens ran out gives its bonus back.
    const total = (h: Hypothesis) => (h.logProb + h.bias - (h.biasState?.pending ?? 0)) / h.tokens.length;
    const ranked = (finished.length > 0 ? finished : live).sort((a, b) => total(b) - total(a));
    const best = ranked[0];
    if (!best) throw new SttError('STT_MODEL_INVALID', 'moonshine decoder gave no hypothesis');
    return best;
  }

  async close(): Promise<void> {
    await Promise.all([this.encoder.release(), this.decoder.release()]);
  }
}
