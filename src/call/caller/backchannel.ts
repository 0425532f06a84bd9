// A caller's "uh-huh" while the agent talks is listening, not a turn: words that only acknowledge.
// An agent can give its own list (backchannel_words); these are the default.
import { plainText } from './plain-text.ts';

export const DEFAULT_BACKCHANNELS = [
  'uh-huh',
  'uh huh',
  'mm-hmm',
  'mhm',
  'mm',
  'hmm',
  'okay',
  'ok',
  'right',
  'yeah',
  'yes',
  'yep',
  'sure',
  'got it',
  'i see',
  'alright',
  'all right',
] as const;

/** Whether `text` is nothing but acknowledgements from `phrases` ("Okay, okay." is; "Okay, but when?" is not). */
export function isBackchannel(text: string, phrases: readonly string[] = DEFAULT_BACKCHANNELS): boolean {
  let rest = ` ${plainText(text)} `;
  if (rest.trim() === '') return false;
  const sorted = [...new Set(phrases.map(plainText).filter(Boolean))].sort((a, b) => b.length - a.length);
  for (const phrase of sorted) {
    // Repeated ("okay okay okay"): each pass takes every other one, as the spaces between them are shared.
    while (rest.includes(` ${phrase} `)) rest = rest.replaceAll(` ${phrase} `, ' ');
  }
  return rest.trim() === '';
}
