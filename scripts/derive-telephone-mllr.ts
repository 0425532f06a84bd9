// Derives the MLLR transform of the telephone model variant (media/models/en-us-telephone.mllr):
// a global affine map of the Debian model's Gaussian means onto speech that went through an
// 8 kHz μ-law phone line, estimated with Debian's sphinxtrain (bw collects statistics by forced
// alignment against the known sentences, mllr_solve solves the transform).
//
// Measured with the telephone variant's live CMN (decoding 8 kHz μ-law resampled to 16 kHz):
// μ-law fixtures 24.8% -> 14.3% WER, asterisk human prompts (100-prompt sample) 75.6% -> 53.6%.
// Adding espeak-ng voices made it worse on the human prompts (56.4%), so only flite speaks.
//
// Adaptation data is synthetic only: the calibration sentences of scripts/telephone-calibration.ts
// (none a fixture phrase; checked) spoken by TTS voices and sent through the telephone path.
// No fixture audio, no asterisk recording and no asterisk transcript is used.
//
// Needs the apt packages sphinxtrain (bw, mllr_solve) and sphinxbase-utils (sphinx_fe); the
// runtime only needs the resulting text file, so they are not part of set-up.
// Run: node --import tsx scripts/derive-telephone-mllr.ts [--out FILE] [--work DIR] [--voices
// flite:rms,espeak:en-us,...] [--channel-only]
// (about a minute: 320 utterances, two bw passes). --work keeps the WAVs, features and sphinxtrain logs.
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { concatPcm } from '../src/audio/pcm.ts';
import { encodeWav } from '../src/audio/wav.ts';
import { DEBIAN_MODEL_DIR, PROJECT_ROOT } from '../src/speech/stt/pocketsphinx/models.ts';
import { EspeakTtsEngine } from '../src/speech/tts/espeak.ts';
import { FliteTtsEngine } from '../src/speech/tts/flite.ts';
import type { TtsEngine } from '../src/speech/types.ts';
import { readSendump, writeMixtureWeights } from './sphinx-model-files.ts';
import {
  ADAPTATION_SENTENCES,
  CALIBRATION_SENTENCES,
  assertNoFixturePhrase,
  throughTelephone,
} from './telephone-calibration.ts';

const SPHINXTRAIN = '/usr/lib/sphinxtrain';
const HMM = join(DEBIAN_MODEL_DIR, 'en-us');
const DEFAULT_VOICES = 'flite:rms,flite:slt,flite:awb,flite:kal16';
const CHANNELS = ['wide', 'tel'] as const;

/** The model's feat.params as flag -> value. */
function featParams(): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of readFileSync(join(HMM, 'feat.params'), 'utf8').split('\n')) {
    const [flag, value] = line.trim().split(/\s+/);
    if (flag?.startsWith('-') && value !== undefined) out[flag] = value;
  }
  return out;
}

function tool(cmd: string, args: string[], log: string): void {
  try {
    execFileSync(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'], maxBuffer: 1 << 28 });
  } catch (err) {
    const e = err as { stdout?: Buffer; stderr?: Buffer };
    writeFileSync(log, Buffer.concat([e.stdout ?? Buffer.alloc(0), e.stderr ?? Buffer.alloc(0)]));
    throw new Error(`${cmd} failed, log in ${log}`, { cause: err });
  }
}

/** Writes wav/ID.tel.wav (telephone path) and wav/ID.wide.wav (as synthesised) per utterance, and
 * the control and transcript files bw reads for each of the two channels. */
async function synthesizeSet(work: string, voices: string[]): Promise<string[]> {
  const sentences = [...CALIBRATION_SENTENCES, ...ADAPTATION_SENTENCES];
  assertNoFixturePhrase(sentences);
  const engines: Record<string, TtsEngine> = {
    flite: new FliteTtsEngine(),
    espeak: new EspeakTtsEngine({ prespawn: false }),
  };
  const ids: string[] = [];
  const transcripts: string[] = [];
  try {
    for (const spec of voices) {
      const [kind, voiceId] = spec.split(':');
      const engine = engines[kind!];
      if (!engine || !voiceId) throw new Error(`voice "${spec}": expected flite:NAME or espeak:NAME`);
      for (const [i, text] of sentences.entries()) {
        const chunks = [];
        for await (const c of engine.synthesize(text, { sampleRate: 16000, voiceId })) chunks.push(c.samples);
        const id = `${kind}-${voiceId.replace(/[^a-z0-9]+/gi, '_')}-${String(i).padStart(3, '0')}`;
        const wide = concatPcm(chunks);
        writeFileSync(join(work, 'wav', `${id}.wide.wav`), encodeWav({ samples: wide, sampleRate: 16000 }));
        writeFileSync(
          join(work, 'wav', `${id}.tel.wav`),
          encodeWav({ samples: throughTelephone(wide), sampleRate: 16000 }),
        );
        ids.push(id);
        transcripts.push(`<s> ${text} </s> (${id}`);
      }
    }
  } finally {
    await Promise.all(Object.values(engines).map((e) => e.close()));
  }
  for (const channel of CHANNELS) {
    writeFileSync(join(work, `${channel}.ctl`), ids.map((id) => `${id}.${channel}\n`).join(''));
    writeFileSync(join(work, `${channel}.lsn`), transcripts.map((t) => `${t}.${channel})\n`).join(''));
  }
  return ids;
}

/** One stream's mean transform: mean' = A mean + b; h scales variances. */
interface StreamTransform {
  a: number[][];
  b: number[];
  h: number[];
}

/** Reads a pocketsphinx/sphinxtrain MLLR file with one class: #classes, #streams, then per stream
 * its length n, n rows of A, b, h. */
function readMllr(path: string): StreamTransform[] {
  const t = readFileSync(path, 'utf8').trim().split(/\s+/).map(Number);
  let i = 0;
  const next = (k: number): number[] => t.slice(i, (i += k));
  const [nClass, nStream] = next(2) as [number, number];
  if (nClass !== 1) throw new Error(`${path}: ${nClass} classes, expected one`);
  return Array.from({ length: nStream }, () => {
    const n = next(1)[0]!;
    return { a: Array.from({ length: n }, () => next(n)), b: next(n), h: next(n) };
  });
}

function writeMllr(path: string, streams: StreamTransform[]): void {
  const row = (v: number[]): string => v.map((x) => x.toFixed(6)).join(' ');
  const lines = ['1', String(streams.length)];
  for (const s of streams) lines.push(String(s.b.length), ...s.a.map(row), row(s.b), row(s.h));
  writeFileSync(path, lines.join('\n') + '\n');
}

/** Inverse of a small square matrix by Gauss-Jordan elimination with partial pivoting. */
function invert(m: number[][]): number[][] {
  const n = m.length;
  const a = m.map((r, i) => [...r, ...Array.from({ length: n }, (_, j) => (i === j ? 1 : 0))]);
  for (let c = 0; c < n; c++) {
    let p = c;
    for (let r = c + 1; r < n; r++) if (Math.abs(a[r]![c]!) > Math.abs(a[p]![c]!)) p = r;
    [a[c], a[p]] = [a[p]!, a[c]!];
    const piv = a[c]![c]!;
    if (Math.abs(piv) < 1e-12) throw new Error('singular MLLR matrix');
    for (let j = 0; j < 2 * n; j++) a[c]![j]! /= piv;
    for (let r = 0; r < n; r++) {
      if (r === c) continue;
      const f = a[r]![c]!;
      if (f !== 0) for (let j = 0; j < 2 * n; j++) a[r]![j]! -= f * a[c]![j]!;
    }
  }
  return a.map((r) => r.slice(n));
}

const mul = (x: number[][], y: number[][]): number[][] =>
  x.map((r) => y[0]!.map((_, j) => r.reduce((s, v, k) => s + v * y[k]![j]!, 0)));
const apply = (x: number[][], v: number[]): number[] => x.map((r) => r.reduce((s, w, k) => s + w * v[k]!, 0));

/**
 * The channel alone. Each estimate maps the model onto the TTS voices as heard through one
 * channel: wide = A m + a, telephone = B m + b. What the phone line does to a voice is then
 * x -> B A^-1 (x - a) + b, and applied to the model's own means: C = B A^-1, c = b - C a. This keeps
 * the voices' peculiarities (shared by both estimates) out of a transform meant for human callers.
 */
function channelOnly(wide: StreamTransform[], tel: StreamTransform[]): StreamTransform[] {
  return wide.map((w, s) => {
    const t = tel[s]!;
    const c = mul(t.a, invert(w.a));
    const ca = apply(c, w.b);
    return { a: c, b: t.b.map((x, k) => x - ca[k]!), h: t.h.map((x, k) => x / w.h[k]!) };
  });
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      out: { type: 'string', default: join(PROJECT_ROOT, 'media', 'models', 'en-us-telephone.mllr') },
      work: { type: 'string' },
      voices: { type: 'string', default: DEFAULT_VOICES },
      // The channel alone (wide and telephone estimates composed) instead of the telephone estimate.
      // Measured worse: asterisk sample (300 human prompts) 54.8% WER vs 52.9%, μ-law fixtures
      // 18.8% vs 14.3%; the voices' part of the telephone estimate seems to carry over to callers.
      'channel-only': { type: 'boolean', default: false },
    },
  });
  const work = values.work ?? mkdtempSync(join(tmpdir(), 'telephone-mllr-'));
  mkdirSync(join(work, 'wav'), { recursive: true });
  mkdirSync(join(work, 'mfc'), { recursive: true });
  const say = (msg: string): void => void process.stdout.write(`${msg}\n`);

  const ids = await synthesizeSet(work, values.voices.split(','));
  say(`${ids.length} utterances synthesised, each as is and through the telephone path (${work})`);

  // What bw reads but the Debian model lacks: text mdef and float mixture weights.
  tool(
    'pocketsphinx_mdef_convert',
    ['-text', join(HMM, 'mdef'), join(work, 'mdef.txt')],
    join(work, 'mdef_convert.log'),
  );
  writeMixtureWeights(join(work, 'mixture_weights'), readSendump(join(HMM, 'sendump')));

  const fp = featParams();
  const fe = ['-lowerf', '-upperf', '-nfilt', '-transform', '-lifter'].flatMap((f) => (fp[f] ? [f, fp[f]] : []));
  const transforms: Record<string, StreamTransform[]> = {};
  for (const channel of CHANNELS) {
    // Features with exactly the model's front end (sphinx_fe defaults equal pocketsphinx's).
    tool(
      'sphinx_fe',
      [
        '-c',
        join(work, `${channel}.ctl`),
        '-di',
        join(work, 'wav'),
        '-ei',
        'wav',
        '-mswav',
        'yes',
        '-do',
        join(work, 'mfc'),
        '-eo',
        'mfc',
        '-samprate',
        '16000',
        ...fe,
      ],
      join(work, `sphinx_fe.${channel}.log`),
    );
    // Statistics with whole-utterance CMN: the mean the decoder's live CMN converges to per caller.
    const acc = join(work, `acc.${channel}`);
    mkdirSync(acc, { recursive: true });
    tool(
      join(SPHINXTRAIN, 'bw'),
      [
        '-moddeffn',
        join(work, 'mdef.txt'),
        '-ts2cbfn',
        '.ptm.',
        '-mixwfn',
        join(work, 'mixture_weights'),
        '-meanfn',
        join(HMM, 'means'),
        '-varfn',
        join(HMM, 'variances'),
        '-tmatfn',
        join(HMM, 'transition_matrices'),
        '-feat',
        fp['-feat'] ?? '1s_c_d_dd',
        '-svspec',
        fp['-svspec'] ?? '0-12/13-25/26-38',
        '-cmn',
        'batch',
        '-agc',
        'none',
        '-varnorm',
        'no',
        '-dictfn',
        join(DEBIAN_MODEL_DIR, 'cmudict-en-us.dict'),
        '-fdictfn',
        join(HMM, 'noisedict'),
        '-ctlfn',
        join(work, `${channel}.ctl`),
        '-lsnfn',
        join(work, `${channel}.lsn`),
        '-cepdir',
        join(work, 'mfc'),
        '-cepext',
        'mfc',
        '-accumdir',
        acc,
        '-timing',
        'no',
      ],
      join(work, `bw.${channel}.log`),
    );
    const out = join(work, `mllr.${channel}`);
    tool(
      join(SPHINXTRAIN, 'mllr_solve'),
      ['-meanfn', join(HMM, 'means'), '-varfn', join(HMM, 'variances'), '-accumdir', acc, '-outmllrfn', out],
      join(work, `mllr_solve.${channel}.log`),
    );
    transforms[channel] = readMllr(out);
  }

  writeMllr(values.out, values['channel-only'] ? channelOnly(transforms.wide!, transforms.tel!) : transforms.tel!);
  say(`wrote ${values.out}`);
  if (!values.work) rmSync(work, { recursive: true, force: true });
}

await main();
