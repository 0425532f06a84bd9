// Model stream hot path: SSE bytes → tokens (eventsource-parser + zod per chunk) → speakable
// chunks. Run: npm run bench:llm
import { Bench } from 'tinybench';
import { ChatStreamDecoder } from '../src/llm/client.ts';
import { SpeakableChunker } from '../src/llm/speakable.ts';
import { taskRows } from './report.ts';

function sse(delta: Record<string, unknown>, finish: string | null = null): string {
  const chunk = {
    id: 'chatcmpl-bench',
    object: 'chat.completion.chunk',
    created: 1_700_000_000,
    model: 'bench-model',
    system_fingerprint: 'fp_1',
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
  };
  return `data: ${JSON.stringify(chunk)}\n\n`;
}

const reply =
  'Sure thing, I can help you with that. Your appointment with Dr. Lee is on Friday at 10.30 a.m., and the fee is $1,200.50 in total. ' +
  'You will get a confirmation at ann.lee@example.com shortly. Is there anything else I can do for you today? ';
const words = reply.match(/\S+\s*/g) ?? [];
const tokens: string[] = [];
while (tokens.length < 500) tokens.push(...words);
tokens.length = 500;

// The start of a reply as the first network read carries it: role chunk plus the first words.
const firstRead = Buffer.from(
  sse({ role: 'assistant', content: '' }) +
    tokens
      .slice(0, 8)
      .map((t) => sse({ content: t }))
      .join(''),
  'utf8',
);

// A whole 500-token reply, delivered in 1 KiB reads.
const whole = Buffer.from(
  sse({ role: 'assistant', content: '' }) +
    tokens.map((t) => sse({ content: t })).join('') +
    sse({}, 'stop') +
    'data: [DONE]\n\n',
  'utf8',
);
const reads: Buffer[] = [];
for (let i = 0; i < whole.length; i += 1024) reads.push(whole.subarray(i, i + 1024));

let sink = 0;

function firstChunk(): void {
  const decoder = new ChatStreamDecoder();
  const chunker = new SpeakableChunker();
  decoder.feed(firstRead);
  for (const t of decoder.tokens) {
    const c = chunker.push(t);
    if (c !== null) {
      sink += c.length;
      return;
    }
  }
  throw new Error('no speakable chunk in the first read');
}

function wholeReply(): void {
  const decoder = new ChatStreamDecoder();
  const chunker = new SpeakableChunker();
  for (const r of reads) {
    decoder.feed(r);
    const ts = decoder.tokens;
    for (let i = 0; i < ts.length; i++) {
      const c = chunker.push(ts[i] as string);
      if (c !== null) sink += c.length;
    }
    ts.length = 0;
  }
  decoder.end();
  const rest = chunker.flush();
  if (rest !== null) sink += rest.length;
}

const bench = new Bench({ time: 1_000, warmup: true });
bench.add('first byte → first speakable chunk', firstChunk);
bench.add('500-token reply: SSE parse + chunking', wholeReply);
await bench.run();

console.table(taskRows(bench));
for (const task of bench.tasks) {
  const r = task.result;
  if (r.state !== 'completed') throw new Error(`${task.name}: ${r.state}`);
  const us = (ms: number): string => `${(ms * 1000).toFixed(1)} µs`;
  if (task.name.startsWith('first')) {
    console.log(
      `first byte → first speakable chunk: median ${us(r.latency.p50)}, mean ${us(r.latency.mean)}, p99 ${us(r.latency.p99)}`,
    );
  } else {
    const perSecond = (ms: number): string => Math.round(500 / (ms / 1000)).toLocaleString('en-US');
    console.log(
      `tokens parsed per second (SSE parse + zod + chunking): median ${perSecond(r.latency.p50)}, mean ${perSecond(r.latency.mean)}`,
    );
  }
}
if (sink === 0) throw new Error('benchmark produced nothing');
