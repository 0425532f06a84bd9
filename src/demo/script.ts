// DEMO MODEL, not a language model: a deterministic front-desk script that decides each reply
// from the conversation state in `messages` alone. It greets, takes a name, books through the
// demo tool, says goodbye with end_call, and answers post-call analysis requests. Speech
// recognisers mishear, so any user turn after a question is taken as its answer.
import { z } from 'zod';
import { ANALYSIS_FIELDS_PREFIX, ANALYSIS_REQUEST_TAG } from '../analysis/analyze.ts';

export const DEMO_TOOL_NAME = 'book_appointment';
export const DEMO_END_CALL = 'end_call';

const ContentSchema = z.union([z.string(), z.null(), z.array(z.object({ type: z.string(), text: z.string().optional() }).loose())]);

export const DemoMessageSchema = z
  .object({
    role: z.enum(['system', 'developer', 'user', 'assistant', 'tool']),
    content: ContentSchema.optional(),
    tool_calls: z
      .array(z.object({ id: z.string(), type: z.literal('function').optional(), function: z.object({ name: z.string(), arguments: z.string() }) }))
      .nullish(),
    tool_call_id: z.string().optional(),
  })
  .loose();

export const DemoChatRequestSchema = z
  .object({
    model: z.string().min(1),
    messages: z.array(DemoMessageSchema).min(1),
    temperature: z.number().min(0).max(2).default(1),
    max_tokens: z.int().positive().optional(),
    stream: z.boolean().default(true),
    tools: z
      .array(z.object({ type: z.literal('function'), function: z.object({ name: z.string(), description: z.string().optional(), parameters: z.record(z.string(), z.unknown()).optional() }) }))
      .optional(),
    tool_choice: z.union([z.enum(['auto', 'none', 'required']), z.object({ type: z.literal('function'), function: z.object({ name: z.string() }) })]).optional(),
    stream_options: z.object({ include_usage: z.boolean().optional() }).loose().optional(),
  })
  .loose();

export type DemoChatRequest = z.infer<typeof DemoChatRequestSchema>;
type DemoMessage = z.infer<typeof DemoMessageSchema>;

export interface DemoReply {
  text: string;
  calls: { id: string; name: string; arguments: string }[];
}

export const DemoBookingSchema = z.strictObject({ name: z.string().trim().min(1).max(200), time: z.string().trim().min(1).max(200) });
const BookingResultSchema = z.object({ status: z.literal('booked'), confirmation: z.string(), name: z.string(), time: z.string() });

const ASK_NAME = 'May I have your name, please?';
const ASK_TIME = 'What day and time would you like to come in?';
const ASK_OTHER_TIME = 'What other day and time would work for you?';
const ASK_ANYTHING_ELSE = 'Is there anything else I can help you with?';

function text(m: DemoMessage | undefined): string {
  const c = m?.content;
  if (typeof c === 'string') return c;
  if (Array.isArray(c)) return c.map((p) => p.text ?? '').join('');
  return '';
}

/** What the caller said, without filler and punctuation, in title case for a name. */
export function cleanName(heard: string): string {
  const words = heard
    .toLowerCase()
    .replace(/[^\p{L}\p{N}' -]+/gu, ' ')
    .replace(/\b(um+|uh+|er+|yes|yeah|hi|hello|well|so|okay|ok|sure)\b/g, ' ')
    .replace(/\b(my name is|my name's|name's|name is|i am|i'm|im|it's|its|this is|call me|it is)\b/g, ' ')
    .split(/\s+/)
    .filter((w) => w !== '')
    .slice(0, 3);
  if (words.length === 0) return 'friend';
  return words.map((w) => w.charAt(0).toUpperCase() + w.slice(1)).join(' ');
}

export function cleanTime(heard: string): string {
  const t = heard.replace(/[^\p{L}\p{N}:' -]+/gu, ' ').replace(/\s+/g, ' ').trim();
  return t === '' ? 'the first available time' : t;
}

/** A stable 4-digit code, so the demo books the same way every run. */
export function confirmationCode(name: string, time: string): string {
  let h = 7;
  for (const ch of `${name}|${time}`) h = (h * 31 + (ch.codePointAt(0) ?? 0)) % 10_000;
  return `DEMO-${String(h).padStart(4, '0')}`;
}

/** The user's answer to the last assistant question that contained `question`. */
function answerTo(messages: DemoMessage[], question: string): string | null {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i];
    if (m?.role === 'assistant' && text(m).includes(question)) {
      const next = messages.slice(i + 1).find((x) => x.role === 'user');
      return next ? text(next) : null;
    }
  }
  return null;
}

function analysisReply(messages: DemoMessage[]): string {
  const system = text(messages.find((m) => m.role === 'system'));
  const transcript = text(messages.find((m) => m.role === 'user'));
  const fieldsLine = system.split('\n').find((l) => l.startsWith(ANALYSIS_FIELDS_PREFIX)) ?? '';
  const fields = z
    .array(z.object({ name: z.string(), type: z.enum(['string', 'number', 'boolean']) }))
    .catch([])
    .parse(((): unknown => {
      try {
        return JSON.parse(fieldsLine.slice(ANALYSIS_FIELDS_PREFIX.length));
      } catch {
        return [];
      }
    })());
  const booked = /You're all set, (.+?)\. I've booked you for (.+?)\. /.exec(transcript);
  const summary = booked
    ? `The caller, ${booked[1]}, booked an appointment for ${booked[2]} with the demo front desk.`
    : 'The caller spoke with the demo front desk but did not book an appointment.';
  return JSON.stringify({
    summary,
    user_sentiment: booked ? 'positive' : 'neutral',
    custom_analysis_data: fields.map((f) => ({
      name: f.name,
      value: f.type === 'boolean' ? booked !== null : f.type === 'string' ? (booked?.[2] ?? '') : booked ? 1 : 0,
    })),
  });
}

/** The scripted reply, with tool_choice "required" or a named function forcing a call when the script made none. */
export function demoReply(req: DemoChatRequest): DemoReply {
  const reply = scriptedReply(req);
  const choice = req.tool_choice;
  if (reply.calls.length > 0 || (choice !== 'required' && typeof choice !== 'object')) return reply;
  const offered = (req.tools ?? []).map((t) => t.function.name);
  const name = typeof choice === 'object' ? choice.function.name : offered[0];
  if (name === undefined || !offered.includes(name)) return reply;
  const args =
    name === DEMO_TOOL_NAME
      ? JSON.stringify({ name: cleanName(answerTo(req.messages, ASK_NAME) ?? ''), time: cleanTime(answerTo(req.messages, ASK_TIME) ?? '') })
      : '{}';
  return { text: reply.text, calls: [{ id: `call_demo_${req.messages.length}_0`, name, arguments: args }] };
}

function scriptedReply(req: DemoChatRequest): DemoReply {
  const messages = req.messages;
  const id = (i: number): string => `call_demo_${messages.length}_${i}`;
  if (text(messages[0]).startsWith(ANALYSIS_REQUEST_TAG)) return { text: analysisReply(messages), calls: [] };

  const offered = new Set((req.tools ?? []).map((t) => t.function.name));
  const choice = req.tool_choice ?? 'auto';
  const mayCall = (name: string): boolean =>
    offered.has(name) && choice !== 'none' && (typeof choice === 'string' || choice.function.name === name);

  const last = messages.at(-1);
  if (last?.role === 'tool') {
    const answered = messages.flatMap((m) => m.tool_calls ?? []).find((c) => c.id === last.tool_call_id);
    if (answered?.function.name === DEMO_TOOL_NAME) {
      let booking: z.infer<typeof BookingResultSchema> | null = null;
      try {
        const parsed = BookingResultSchema.safeParse(JSON.parse(text(last)));
        booking = parsed.success ? parsed.data : null;
      } catch {
        booking = null;
      }
      if (!booking) return { text: `Sorry, I could not book that time. ${ASK_OTHER_TIME}`, calls: [] };
      return {
        text: `You're all set, ${booking.name}. I've booked you for ${booking.time}. Your confirmation code is ${booking.confirmation}. ${ASK_ANYTHING_ELSE}`,
        calls: [],
      };
    }
    return { text: 'Goodbye!', calls: [] };
  }

  const lastAssistant = [...messages].reverse().find((m) => m.role === 'assistant');
  const asked = text(lastAssistant);
  const heard = text([...messages].reverse().find((m) => m.role === 'user'));

  if (asked.includes(ASK_NAME)) {
    return { text: `Thank you, ${cleanName(heard)}. ${ASK_TIME}`, calls: [] };
  }
  if (asked.includes(ASK_TIME) || asked.includes(ASK_OTHER_TIME)) {
    const name = cleanName(answerTo(messages, ASK_NAME) ?? '');
    const time = cleanTime(heard);
    if (!mayCall(DEMO_TOOL_NAME)) return { text: `I would book ${time} for you, ${name}, but booking is not available right now.`, calls: [] };
    return { text: 'Let me book that for you.', calls: [{ id: id(0), name: DEMO_TOOL_NAME, arguments: JSON.stringify({ name, time }) }] };
  }
  if (asked.includes(ASK_ANYTHING_ELSE)) {
    const bye = 'Thank you for calling the demo front desk. Goodbye!';
    return { text: bye, calls: mayCall(DEMO_END_CALL) ? [{ id: id(0), name: DEMO_END_CALL, arguments: '{"reason":"conversation complete"}' }] : [] };
  }
  return { text: `Welcome to the demo front desk. ${ASK_NAME}`, calls: [] };
}
