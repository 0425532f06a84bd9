// Moonshine tiny through onnxruntime-node: an encoder over the whole utterance, then a greedy
// token-by-token decoder that keeps its attention keys and values between steps. A run holds
// the thread that calls it for tens of milliseconds, so only worker threads use this file.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import llamaTokenizer from 'llama-tokenizer-js';
import ort from 'onnxruntime-node';
import { int16ToFloat, rms } from '../../../audio/pcm.ts';
import { SttError } from '../errors.ts';

export const MOONSHINE_MODEL = {
  sampleRate: 16000,
  files: { encoder: 'encoder_model.onnx', decoder: 'decoder_model_merged.onnx' },
  /** Decoder shape of the tiny model. */
  layers: 6,
  kvHeads: 8,
  headDim: 36,
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

/**
 * The utterance without the quiet before and after its speech (margins kept). The model was
 * trained on segments cut close to speech: two seconds of line silence ahead of a phrase made it
 * end at once with no words. A frame counts as loud from 30 dB under the loudest one.
 */
export function trimSilence(samples: Int16Array, frame = 320, margin: number = MOONSHINE_MODEL.trimMarginSamples): Int16Array {
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

function emptyCache(): Feeds {
  const { layers, kvHeads, headDim } = MOONSHINE_MODEL;
  const feeds: Feeds = {};
  for (let i = 0; i < layers; i++) {
    for (const part of ['decoder', 'encoder']) {
      for (const kind of ['key', 'value']) feeds[`past_key_values.${i}.${part}.${kind}`] = new ort.Tensor('float32', new Float32Array(0), [0, kvHeads, 1, headDim]);
    }
  }
  return feeds;
}

function argMax(values: Float32Array): number {
  let best = 0;
  for (let i = 1; i < values.length; i++) if ((values[i] ?? -Infinity) > (values[best] ?? -Infinity)) best = i;
  return best;
}

function output(result: ort.InferenceSession.ReturnType, name: string): ort.Tensor {
  const tensor = result[name];
  if (!tensor) throw new SttError('STT_MODEL_INVALID', `moonshine model gave no "${name}" output`);
  return tensor;
}

export class MoonshineRecognizer {
  private constructor(
    private readonly encoder: ort.InferenceSession,
    private readonly decoder: ort.InferenceSession,
  ) {}

  /** Loads both sessions; one intra-op thread each, since every worker thread runs its own. */
  static async load(dir: string): Promise<MoonshineRecognizer> {
    const missing = missingMoonshineFiles(dir);
    if (missing.length > 0) throw new SttError('STT_MODEL_INVALID', `moonshine model files missing (run npm run setup): ${missing.join(', ')}`);
    const options: ort.InferenceSession.SessionOptions = { intraOpNumThreads: 1, interOpNumThreads: 1, graphOptimizationLevel: 'all' };
    try {
      const [encoder, decoder] = await Promise.all([
        ort.InferenceSession.create(join(dir, MOONSHINE_MODEL.files.encoder), options),
        ort.InferenceSession.create(join(dir, MOONSHINE_MODEL.files.decoder), options),
      ]);
      return new MoonshineRecognizer(encoder, decoder);
    } catch (err) {
      throw new SttError('STT_MODEL_INVALID', `moonshine model did not load: ${(err as Error).message}`, { cause: err });
    }
  }

  /** Text of one utterance of 16 kHz PCM16. */
  async transcribe(utterance: Int16Array): Promise<string> {
    const samples = trimSilence(utterance);
    if (samples.length < MOONSHINE_MODEL.minSamples) return '';
    const audio = int16ToFloat(samples);
    const encoded = await this.encoder.run({ input_values: new ort.Tensor('float32', audio, [1, audio.length]) });
    const hidden = output(encoded, 'last_hidden_state');
    const maxTokens = Math.ceil((samples.length / MOONSHINE_MODEL.sampleRate) * MOONSHINE_MODEL.maxTokensPerSecond) + 2;
    let cache = emptyCache();
    const tokens: number[] = [];
    let last: number = MOONSHINE_MODEL.startToken;
    for (let step = 0; step < maxTokens; step++) {
      const result = await this.decoder.run({
        input_ids: new ort.Tensor('int64', BigInt64Array.of(BigInt(last)), [1, 1]),
        encoder_hidden_states: hidden,
        // The first step fills the cross-attention cache from the encoder; later steps reuse it.
        use_cache_branch: new ort.Tensor('bool', [step > 0], [1]),
        ...cache,
      });
      const logits = output(result, 'logits').data;
      if (!(logits instanceof Float32Array)) throw new SttError('STT_MODEL_INVALID', 'moonshine logits are not float32');
      last = argMax(logits);
      if (last === MOONSHINE_MODEL.endToken) break;
      tokens.push(last);
      const next: Feeds = {};
      for (const name of Object.keys(cache)) {
        // The cross-attention part is computed once, on the first step.
        next[name] = step === 0 || name.includes('.decoder.') ? output(result, name.replace('past_key_values', 'present')) : (cache[name] as ort.Tensor);
      }
      cache = next;
    }
    return llamaTokenizer.decode(tokens.filter((t) => t > MOONSHINE_MODEL.endToken && t < MOONSHINE_MODEL.firstSpecialToken)).trim();
  }

  async close(): Promise<void> {
    await Promise.all([this.encoder.release(), this.decoder.release()]);
  }
}
