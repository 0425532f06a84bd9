// DEMO PEER, not for production use: a deterministic chat-completions server (section 4.9 of
// the interface: SSE chunks and [DONE], or one JSON object with stream false) and the HTTP
// tool it books through, so the service runs a full call with no model and no customer API.
// Register with prefix /demo: POST /demo/llm/v1/chat/completions, POST /demo/tools/book_appointment.
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { z } from 'zod';
import {
  confirmationCode,
  DemoBookingSchema,
  DemoChatRequestSchema,
  demoReply,
  type DemoChatRequest,
  type DemoReply,
} from './script.ts';

export interface DemoRoutesOptions {
  /** Pause between streamed chunks, to feel like a model; 0 in tests. */
  chunkDelayMs?: number;
}

const CREATED = 1_700_000_000; // fixed: the demo's replies are the same every run

function badRequest(reply: FastifyReply, error: z.ZodError): FastifyReply {
  const details = error.issues.map((i) => `${i.path.join('.') || '(body)'}: ${i.message}`).join('; ');
  return reply.code(400).send({ error: 'invalid request', details });
}

function words(text: string): string[] {
  return text.match(/\S+\s*/g) ?? [];
}

function usageOf(
  req: DemoChatRequest,
  out: DemoReply,
): { prompt_tokens: number; completion_tokens: number; total_tokens: number } {
  const prompt = req.messages.reduce((n, m) => n + (typeof m.content === 'string' ? words(m.content).length : 0), 0);
  const completion = words(out.text).length + out.calls.length;
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
}

function completion(req: DemoChatRequest, out: DemoReply, id: string): Record<string, unknown> {
  return {
    id,
    object: 'chat.completion',
    created: CREATED,
    model: req.model,
    choices: [
      {
        index: 0,
        finish_reason: out.calls.length > 0 ? 'tool_calls' : 'stop',
        logprobs: null,
        message: {
          role: 'assistant',
          content: out.text === '' ? null : out.text,
          refusal: null,
          ...(out.calls.length > 0
            ? {
                tool_calls: out.calls.map((c) => ({
                  id: c.id,
                  type: 'function',
                  function: { name: c.name, arguments: c.arguments },
                })),
              }
            : {}),
        },
      },
    ],
    usage: usageOf(req, out),
  };
}

function sseEvents(req: DemoChatRequest, out: DemoReply, id: string): string[] {
  const base = { id, object: 'chat.completion.chunk', created: CREATED, model: req.model };
  const ev = (delta: Record<string, unknown>, finish: string | null): string =>
    `data: ${JSON.stringify({ ...base, choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }] })}\n\n`;
  const events = [ev({ role: 'assistant', content: '' }, null)];
  for (const w of words(out.text)) events.push(ev({ content: w }, null));
  out.calls.forEach((c, index) => {
    events.push(
      ev({ tool_calls: [{ index, id: c.id, type: 'function', function: { name: c.name, arguments: '' } }] }, null),
    );
    const half = Math.ceil(c.arguments.length / 2);
    events.push(ev({ tool_calls: [{ index, function: { arguments: c.arguments.slice(0, half) } }] }, null));
    events.push(ev({ tool_calls: [{ index, function: { arguments: c.arguments.slice(half) } }] }, null));
  });
  events.push(ev({}, out.calls.length > 0 ? 'tool_calls' : 'stop'));
  if (req.stream_options?.include_usage) {
    events.push(`data: ${JSON.stringify({ ...base, choices: [], usage: usageOf(req, out) })}\n\n`);
  }
  events.push('data: [DONE]\n\n');
  return events;
}

export async function demoRoutes(app: FastifyInstance, opts: DemoRoutesOptions = {}): Promise<void> {
  const delay = opts.chunkDelayMs ?? 0;
  let served = 0;

  app.post('/llm/v1/chat/completions', async (request, reply) => {
    const parsed = DemoChatRequestSchema.safeParse(request.body);
    if (!parsed.success) return badRequest(reply, parsed.error);
    const req = parsed.data;
    const out = demoReply(req);
    const id = `chatcmpl-demo-${++served}`;
    if (!req.stream) return reply.send(completion(req, out, id));

    reply.hijack();
    const raw = reply.raw;
    raw.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
    for (const event of sseEvents(req, out, id)) {
      if (raw.destroyed) return reply; // the caller hung up or barged in
      raw.write(event);
      if (delay > 0) await new Promise((r) => setTimeout(r, delay));
    }
    raw.end();
    return reply;
  });

  app.post('/tools/book_appointment', async (request, reply) => {
    const parsed = DemoBookingSchema.safeParse(request.body);
    if (!parsed.success) return badRequest(reply, parsed.error);
    const { name, time } = parsed.data;
    return reply.send({ status: 'booked', confirmation: confirmationCode(name, time), name, time });
  });
}
