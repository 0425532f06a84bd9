// DEMO MODEL, not a language model: a deterministic front-desk script that decides each reply
// from the conversation in `messages` alone. It gathers the caller's name and the day and time
// they want from whatever they said, in any order and any turn, asks for what is missing,
// confirms (by voice, or 1 / 2 on the keypad), books through the demo tool, says goodbye with
// end_call, and answers post-call analysis requests. Calling a phone menu, it presses the key for
// appointments. It can also play the caller of an agent test (a persona booking a time). Simple
// word patterns, not understanding: it is a demo.
import { z } from 'zod';
import { GOAL_LINE, HANG_UP_MARK, PERSONA_LINE, SIMULATED_CALLER_TAG } from '../agent-tests/persona.ts';
import { ANALYSIS_FIELDS_PREFIX, ANALYSIS_REQUEST_TAG } from '../analysis/analyze.ts';
import { KEYPAD_TURN_PREFIX } from '../call/caller/keypad.ts';
import { REMINDER_NOTE_PREFIX, TRANSFER_FAILED_NOTE, TRANSFER_SUMMARY_NOTE } from '../call/model/prompts.ts';

export const DEMO_TOOL_NAME = 'book_appointment';
export const DEMO_END_CALL = 'end_call';
export const DEMO_PRESS_DIGITS = 'press_digits';
export const DEMO_TRANSFER = 'transfer_call';
/** Said when the caller comes back from a transfer that did not go through. */
export const DEMO_TRANSFER_FAILED =
  "I'm sorry, I couldn't put you through. Is there anything else I can help you with?";
/** Said when a transfer the caller asked for could not be made (the tool's result says why). */
export const DEMO_NO_TRANSFER = "I'm sorry, I can't transfer you from here. I can book an appointment for you.";

const ContentSchema = z.union([
  z.string(),
  z.null(),
  z.array(z.object({ type: z.string(), text: z.string().optional() }).loose()),
]);

export const DemoMessageSchema = z
  .object({
    role: z.enum(['system', 'developer', 'user', 'assistant', 'tool']),
    content: ContentSchema.optional(),
    tool_calls: z
      .array(
        z.object({
          id: z.string(),
          type: z.literal('function').optional(),
          function: z.object({ name: z.string(), arguments: z.string() }),
        }),
      )
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
      .array(
        z.object({
          type: z.literal('function'),
          function: z.object({
            name: z.string(),
            description: z.string().optional(),
            parameters: z.record(z.string(), z.unknown()).optional(),
          }),
        }),
      )
      .optional(),
    tool_choice: z
      .union([
        z.enum(['auto', 'none', 'required']),
        z.object({ type: z.literal('function'), function: z.object({ name: z.string() }) }),
      ])
      .optional(),
    stream_options: z.object({ include_usage: z.boolean().optional() }).loose().optional(),
  })
  .loose();

export type DemoChatRequest = z.infer<typeof DemoChatRequestSchema>;
type DemoMessage = z.infer<typeof DemoMessageSchema>;

export interface DemoReply {
  text: string;
  calls: { id: string; name: string; arguments: string }[];
}

export const DemoBookingSchema = z.strictObject({
  name: z.string().trim().min(1).max(200),
  time: z.string().trim().min(1).max(200),
});
const BookingResultSchema = z.object({
  status: z.literal('booked'),
  confirmation: z.string(),
  name: z.string(),
  time: z.string(),
});

const ASK_NAME = 'May I have your name, please?';
const ASK_TIME = 'What day and time would you like to come in?';
const ASK_OTHER_TIME = 'What other day and time would work for you?';
const START_OVER = "Sorry about that, let's start over.";
const SHALL_I_BOOK = 'Shall I book it?';
const ASK_ANYTHING_ELSE = 'Is there anything else I can help you with?';
const GOODBYE = 'Thank you for calling the demo front desk. Goodbye!';

function text(m: DemoMessage | undefined): string {
  const c = m?.content;
  if (typeof c === 'string') return c;
  if (Array.isArray(c)) return c.map((p) => p.text ?? '').join('');
  return '';
}

/** Lower-case words, punctuation dropped ("a.m." becomes "a m"); apostrophes and clock colons kept. */
function wordsOf(heard: string): string[] {
  return heard
    .toLowerCase()
    .replace(/[’]/g, "'")
    .replace(/[^\p{L}\p{N}:' -]+/gu, ' ')
    .replace(/(^|\s)[-']+|[-']+(?=\s|$)/g, ' ')
    .split(/\s+/)
    .filter((w) => w !== '');
}

const title = (w: string): string => w.charAt(0).toUpperCase() + w.slice(1);

const FILLER = new Set([
  'um',
  'umm',
  'uh',
  'uhh',
  'er',
  'erm',
  'yes',
  'yeah',
  'hi',
  'hello',
  'hey',
  'well',
  'so',
  'okay',
  'ok',
  'sure',
  'oh',
]);
/** Words after "my name is" that end the name. */
const NOT_NAME = new Set([
  'and',
  'but',
  'i',
  "i'm",
  'im',
  'i’d',
  "i'd",
  'for',
  'to',
  'at',
  'on',
  'please',
  'calling',
  'from',
  'the',
  'a',
  'an',
  'would',
  'want',
  'like',
  'here',
  'speaking',
  'thanks',
  'thank',
]);
/** A bare answer with one of these is a request, not a name. */
const REQUEST_WORDS =
  /\b(book|booking|appointment|visit|like|want|need|calling|call|help|schedule|reschedule|cancel|question|time|day|no|not|yes|please)\b/;
const INTRODUCTIONS = [
  ['my', 'name', 'is'],
  ['my', "name's"],
  ["name's"],
  ['name', 'is'],
  ['this', 'is'],
  ['i', 'am'],
  ["i'm"],
  ['im'],
  ["it's"],
  ['its'],
  ['it', 'is'],
  ['call', 'me'],
];

/** The caller's name, title-cased, from "my name is …", "this is …", "I'm …" and the like; null without one. */
export function nameIn(heard: string): string | null {
  const words = wordsOf(heard);
  for (let i = 0; i < words.length; i++) {
    const intro = INTRODUCTIONS.find((p) => p.every((w, k) => words[i + k] === w));
    if (!intro) continue;
    const name: string[] = [];
    for (const w of words.slice(i + intro.length)) {
      if (NOT_NAME.has(w) || FILLER.has(w) || isTimeWord(w) || name.length === 3) break;
      name.push(w);
    }
    if (name.length > 0) return name.map(title).join(' ');
  }
  return null;
}

/** A short answer to "may I have your name" that is nothing but a name ("John Smith."); else null. */
export function bareName(heard: string): string | null {
  const words = wordsOf(heard).filter((w) => !FILLER.has(w));
  if (words.length === 0 || words.length > 3 || REQUEST_WORDS.test(words.join(' ')) || words.some(isTimeWord))
    return null;
  return words.map(title).join(' ');
}

const DAYS = new Set(['monday', 'tuesday', 'wednesday', 'thursday', 'friday', 'saturday', 'sunday']);
const MONTHS = new Set([
  'january',
  'february',
  'march',
  'april',
  'may',
  'june',
  'july',
  'august',
  'september',
  'october',
  'november',
  'december',
]);
const RELATIVE_DAYS = new Set(['today', 'tonight', 'tomorrow', 'weekend']);
const PARTS_OF_DAY = new Set(['morning', 'afternoon', 'evening', 'noon', 'midday', 'lunchtime', 'night']);
const MERIDIEM = new Set(['am', 'pm', "o'clock", 'oclock']);
const NUMBER_WORDS = new Set([
  'one',
  'two',
  'three',
  'four',
  'five',
  'six',
  'seven',
  'eight',
  'nine',
  'ten',
  'eleven',
  'twelve',
  'fifteen',
  'thirty',
  'forty',
  'forty-five',
  'half',
  'quarter',
]);
/** Words that may sit inside a day-and-time phrase without being one. */
const JOINERS = new Set(['at', 'on', 'in', 'the', 'next', 'this', 'of', 'past', 'after', 'around', 'about', 'by']);
const LEADING_DROPPED = new Set(['on', 'in', 'the', 'of', 'by', 'after', 'past']);
const TRAILING_DROPPED = new Set([
  'at',
  'on',
  'in',
  'the',
  'of',
  'past',
  'after',
  'around',
  'about',
  'by',
  'next',
  'this',
]);

const isNumber = (w: string): boolean =>
  NUMBER_WORDS.has(w) || /^\d{1,2}(:\d\d)?$/.test(w) || /^\d{1,2}(st|nd|rd|th)$/.test(w);
const isClock = (w: string): boolean => /^\d{1,2}(:\d\d)?(am|pm)$/.test(w) || /^\d{1,2}:\d\d$/.test(w);
function isTimeWord(w: string): boolean {
  return DAYS.has(w) || MONTHS.has(w) || RELATIVE_DAYS.has(w) || PARTS_OF_DAY.has(w) || MERIDIEM.has(w) || isClock(w);
}

/**
 * The day and time in what the caller said ("Friday morning", "tomorrow at three pm", "next
 * Monday at 10:30"), weekday and month names capitalised; null when it names none. "May" alone
 * is a month only beside a number.
 */
export function timeIn(heard: string): string | null {
  const words = wordsOf(heard);
  const anchor = words.map((w, i) => {
    const before = words[i - 1] ?? '';
    const after = words[i + 1] ?? '';
    if (w === 'may') return isNumber(before) || isNumber(after);
    if (isTimeWord(w)) return true;
    if ((w === 'a' || w === 'p') && after === 'm' && isNumber(before)) return true;
    if (w === 'm' && (before === 'a' || before === 'p') && isNumber(words[i - 2] ?? '')) return true;
    if (isNumber(w))
      return (
        ['at', 'around', 'about', 'by', 'past'].includes(before) ||
        MERIDIEM.has(after) ||
        after === 'a' ||
        after === 'p' ||
        isTimeWord(before)
      );
    return false;
  });
  const partOf = (i: number): boolean => anchor[i]! || JOINERS.has(words[i]!) || isNumber(words[i]!);
  let best: { from: number; to: number; anchors: number } | null = null;
  for (let i = 0; i < words.length;) {
    if (!partOf(i)) {
      i++;
      continue;
    }
    let j = i;
    while (j < words.length && partOf(j)) j++;
    let from = i;
    let to = j;
    while (from < to && LEADING_DROPPED.has(words[from]!)) from++;
    while (to > from && TRAILING_DROPPED.has(words[to - 1]!)) to--;
    const anchors = anchor.slice(from, to).filter(Boolean).length;
    if (anchors > 0 && (!best || anchors >= best.anchors)) best = { from, to, anchors };
    i = j;
  }
  if (!best) return null;
  return words
    .slice(best.from, best.to)
    .map((w) => (DAYS.has(w) || (MONTHS.has(w) && w !== 'may') ? title(w) : w))
    .join(' ');
}

const DIGIT_WORDS = ['zero', 'one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine'];
/** What a menu option is for, when it is what the demo calls about. */
const OUR_OPTION = /\b(appointments?|a ?point\w*|booking|book|schedul\w*|front desk|reception)\b/;

/**
 * The key to press for the demo's business in a phone menu ("for billing, press one; for
 * appointments, press two"): the option that names appointments; null without one (a menu read
 * out in parts may name it in the next).
 */
export function menuKey(heard: string): string | null {
  const words = wordsOf(heard);
  const presses: { at: number; key: string }[] = [];
  words.forEach((w, i) => {
    if (i === 0 || words[i - 1] !== 'press') return;
    const digit = DIGIT_WORDS.indexOf(w);
    const key = /^[0-9]$/.test(w)
      ? w
      : w === 'star'
        ? '*'
        : w === 'pound' || w === 'hash'
          ? '#'
          : digit >= 0
            ? String(digit)
            : null;
    if (key !== null) presses.push({ at: i - 1, key });
  });
  if (presses.length === 0) return null;
  // "For appointments, press one" names each option before its key; "press one for appointments", after.
  const first = words.slice(0, presses[0]!.at);
  const labelsBefore = first.includes('for') || first.includes('to');
  const options = presses.map((p, n) => {
    const from = labelsBefore ? (n === 0 ? 0 : presses[n - 1]!.at + 2) : p.at + 2;
    const to = labelsBefore ? p.at : (presses[n + 1]?.at ?? words.length);
    return { key: p.key, label: words.slice(from, to).join(' ') };
  });
  return options.find((o) => OUR_OPTION.test(o.label))?.key ?? null;
}

/**
 * What the callee has said since the agent last pressed keys: a menu read out over several turns (one answered by the
 * greeting, say) is one menu.
 */
function menuHeard(messages: DemoMessage[]): string {
  const pressed = messages.findLastIndex((m) => m.tool_calls?.some((c) => c.function.name === DEMO_PRESS_DIGITS));
  return messages
    .slice(pressed + 1)
    .filter((m) => m.role === 'user' && !text(m).startsWith(KEYPAD_TURN_PREFIX))
    .map(text)
    .join(' ');
}

const YES = /\b(yes|yeah|yep|yup|sure|correct|right|please|ok|okay|perfect|great|go ahead|sounds good|do it)\b/;
const NO = /\b(no|nope|not|don't|dont|wrong|wait|change|actually)\b/;
// The recogniser writes it several ways: "goodbye", "good bye", "good-bye", "good-by".
const BYE = /\b(good ?-?by|bye)e?\b/;

/** A stable 4-digit code, so the demo books the same way every run. */
export function confirmationCode(name: string, time: string): string {
  let h = 7;
  for (const ch of `${name}|${time}`) h = (h * 31 + (ch.codePointAt(0) ?? 0)) % 10_000;
  return `DEMO-${String(h).padStart(4, '0')}`;
}

interface Booking {
  name: string | null;
  time: string | null;
  /** Whether the caller's last turn gave the name. */
  nameJustGiven: boolean;
}

/**
 * What the caller has told us so far: the latest name and the latest day and time, from every
 * user turn since the booking was last started over ("no" to the confirmation; a time the tool
 * refused is asked for again).
 */
function bookingSoFar(messages: DemoMessage[]): Booking {
  const lastIndexOf = (phrase: string): number =>
    messages.findLastIndex((m) => m.role === 'assistant' && text(m).includes(phrase));
  const restart = lastIndexOf(START_OVER);
  const timeRestart = Math.max(restart, lastIndexOf(ASK_OTHER_TIME));
  const booking: Booking = { name: null, time: null, nameJustGiven: false };
  let asked = '';
  messages.forEach((m, i) => {
    if (m.role === 'assistant') asked = text(m);
    // Keys are a yes or a no, never a name or a time.
    if (m.role !== 'user' || text(m).startsWith(KEYPAD_TURN_PREFIX)) return;
    const heard = text(m);
    const name = nameIn(heard) ?? (asked.includes(ASK_NAME) ? bareName(heard) : null);
    const time = timeIn(heard);
    const isLast = i === messages.findLastIndex((x) => x.role === 'user');
    if (name && i > restart) {
      booking.name = name;
      booking.nameJustGiven = isLast;
    }
    if (time && i > timeRestart) booking.time = time;
  });
  return booking;
}

function analysisReply(messages: DemoMessage[]): string {
  const system = text(messages.find((m) => m.role === 'system'));
  const transcript = text(messages.find((m) => m.role === 'user'));
  const fieldsLine = system.split('\n').find((l) => l.startsWith(ANALYSIS_FIELDS_PREFIX)) ?? '';
  const fields = z
    .array(z.object({ name: z.string(), type: z.enum(['string', 'number', 'boolean']) }))
    .catch([])
    .parse(
      ((): unknown => {
        try {
          return JSON.parse(fieldsLine.slice(ANALYSIS_FIELDS_PREFIX.length));
        } catch {
          return [];
        }
      })(),
    );
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
  const booking = bookingSoFar(req.messages);
  const args =
    name === DEMO_TOOL_NAME
      ? JSON.stringify({ name: booking.name ?? 'friend', time: booking.time ?? 'the first available time' })
      : '{}';
  return { text: reply.text, calls: [{ id: `call_demo_${req.messages.length}_0`, name, arguments: args }] };
}

function afterTool(messages: DemoMessage[], last: DemoMessage): DemoReply {
  const answered = messages.flatMap((m) => m.tool_calls ?? []).find((c) => c.id === last.tool_call_id);
  // Keys pressed for a menu: its next prompt is to be listened to, nothing to say.
  if (answered?.function.name === DEMO_PRESS_DIGITS) return { text: '', calls: [] };
  // The model hears back from transfer_call only when the call could not be transferred.
  if (answered?.function.name === DEMO_TRANSFER) return { text: DEMO_NO_TRANSFER, calls: [] };
  if (answered?.function.name !== DEMO_TOOL_NAME) return { text: 'Goodbye!', calls: [] };
  let booking: z.infer<typeof BookingResultSchema> | null;
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

/**
 * A persona's name: as it introduces itself ("I'm Ann Lee"), or the capitalised words it opens with ("John Smith, a
 * patient").
 */
function personaName(persona: string): string | null {
  return nameIn(persona) ?? /^([A-Z][a-z]+(?: [A-Z][a-z]+){0,2})\b/.exec(persona.trim())?.[1] ?? null;
}

/**
 * The demo plays a simulated caller too (agent tests), from the persona and goal in its
 * instructions: it gives the name and the day and time they hold when asked, says yes to the
 * read-back, and says goodbye when offered anything else or told goodbye.
 */
function callerReply(messages: DemoMessage[]): string {
  const instructions = text(messages[0]).split('\n');
  const line = (prefix: string): string => instructions.find((l) => l.startsWith(prefix))?.slice(prefix.length) ?? '';
  const persona = line(PERSONA_LINE);
  const goal = line(GOAL_LINE);
  const heard = text(messages.findLast((m) => m.role === 'user')).toLowerCase();
  const name = personaName(persona) ?? nameIn(goal);
  const time = timeIn(goal) ?? timeIn(persona);
  if (heard.includes('anything else')) return `No, thank you. Goodbye. ${HANG_UP_MARK}`;
  if (BYE.test(heard)) return HANG_UP_MARK;
  if (heard.includes('shall i book')) return 'Yes, please.';
  if (heard.includes('your name')) return name ? `My name is ${name}.` : "I'd rather not say.";
  if (heard.includes('day and time')) return time ? `${title(time)} works for me.` : 'Whenever you are free.';
  if (!messages.some((m) => m.role === 'assistant'))
    return `Hi, I'm calling to ${goal.charAt(0).toLowerCase()}${goal.slice(1)}`;
  return 'Sorry, could you say that again?';
}

function scriptedReply(req: DemoChatRequest): DemoReply {
  const messages = req.messages;
  const id = (i: number): string => `call_demo_${messages.length}_${i}`;
  if (text(messages[0]).startsWith(ANALYSIS_REQUEST_TAG)) return { text: analysisReply(messages), calls: [] };
  if (text(messages[0]).startsWith(SIMULATED_CALLER_TAG)) return { text: callerReply(messages), calls: [] };

  const offered = new Set((req.tools ?? []).map((t) => t.function.name));
  const choice = req.tool_choice ?? 'auto';
  const mayCall = (name: string): boolean =>
    offered.has(name) && choice !== 'none' && (typeof choice === 'string' || choice.function.name === name);
  const goodbye = (): DemoReply => ({
    text: GOODBYE,
    calls: mayCall(DEMO_END_CALL)
      ? [{ id: id(0), name: DEMO_END_CALL, arguments: '{"reason":"conversation complete"}' }]
      : [],
  });

  const last = messages.at(-1);
  if (last?.role === 'tool') return afterTool(messages, last);
  if (last?.role === 'system' && text(last).startsWith(TRANSFER_FAILED_NOTE))
    return { text: DEMO_TRANSFER_FAILED, calls: [] };
  // A warm transfer: what the person taking the call over hears first.
  if (last?.role === 'system' && text(last).startsWith(TRANSFER_SUMMARY_NOTE)) {
    const name = bookingSoFar(messages).name;
    return {
      text: `Hi, this is the demo front desk. I have a caller${name ? `, ${name},` : ''} who asked to speak with a person.`,
      calls: [],
    };
  }
  // The runtime asks for a reminder when the caller has gone quiet.
  if (last?.role === 'system' && text(last).startsWith(REMINDER_NOTE_PREFIX)) {
    return { text: "Are you still there? Take your time, I'm here when you're ready.", calls: [] };
  }

  const asked = text(messages.findLast((m) => m.role === 'assistant'));
  const heard = text(messages.findLast((m) => m.role === 'user'));
  const keyed = heard.startsWith(KEYPAD_TURN_PREFIX) ? heard.slice(KEYPAD_TURN_PREFIX.length) : null;
  // On the keypad, 1 is yes and 2 is no.
  const words = keyed === null ? wordsOf(heard).join(' ') : keyed === '1' ? 'yes' : keyed === '2' ? 'no' : '';
  const key = keyed === null && mayCall(DEMO_PRESS_DIGITS) ? menuKey(menuHeard(messages)) : null;
  if (key !== null)
    return { text: '', calls: [{ id: id(0), name: DEMO_PRESS_DIGITS, arguments: JSON.stringify({ digits: key }) }] };
  if (asked.includes(ASK_ANYTHING_ELSE)) return goodbye();
  if (/\b(transfer|real person|operator|a human)\b/.test(words) && mayCall(DEMO_TRANSFER))
    return { text: 'Let me transfer you.', calls: [{ id: id(0), name: DEMO_TRANSFER, arguments: '{}' }] };

  const booking = bookingSoFar(messages);
  if (BYE.test(words) && !timeIn(heard) && !nameIn(heard)) return goodbye();

  if (asked.includes(SHALL_I_BOOK) && booking.name && booking.time) {
    // Only what was read back may be booked: a caller who changed either is asked again.
    const confirmed = asked.includes(`I have you down for ${booking.time}, ${booking.name}.`);
    if (confirmed && NO.test(words)) return { text: `${START_OVER} ${ASK_NAME}`, calls: [] };
    if (confirmed && YES.test(words)) {
      if (!mayCall(DEMO_TOOL_NAME))
        return {
          text: `I would book ${booking.time} for you, ${booking.name}, but booking is not available right now.`,
          calls: [],
        };
      return {
        text: 'Let me book that for you.',
        calls: [
          { id: id(0), name: DEMO_TOOL_NAME, arguments: JSON.stringify({ name: booking.name, time: booking.time }) },
        ],
      };
    }
    if (confirmed)
      return {
        text: `Sorry, I did not catch that. I have you down for ${booking.time}, ${booking.name}. ${SHALL_I_BOOK} Please say yes or no, or press 1 for yes and 2 for no.`,
        calls: [],
      };
  }
  if (!booking.name && !booking.time) {
    const request = /\b(book|appointment|visit|schedule)\b/.test(words);
    return {
      text: `${request ? "I'd be happy to book that for you. " : 'Welcome to the demo front desk. '}${ASK_NAME}`,
      calls: [],
    };
  }
  if (!booking.name) return { text: `${booking.time}, got it. ${ASK_NAME}`, calls: [] };
  const thanks = booking.nameJustGiven ? `Thank you, ${booking.name}. ` : '';
  if (!booking.time) return { text: `${thanks}${ASK_TIME}`, calls: [] };
  return { text: `${thanks}I have you down for ${booking.time}, ${booking.name}. ${SHALL_I_BOOK}`, calls: [] };
}
