// Cuts text into speakable pieces so the first piece can be synthesised (and heard) while the
// rest is still waiting: engines that synthesise a whole input before returning audio answer
// sooner on a short first clause.

/** Pieces shorter than this are joined to the next one: a lone "Hi," sounds choppy and saves nothing. */
const MIN_PIECE_CHARS = 12;

export function splitForSpeech(text: string): string[] {
  const normalized = text.replace(/\s+/g, ' ').trim();
  if (normalized === '') return [];
  // Break after sentence ends and clause punctuation that is followed by a space.
  const raw = normalized.split(/(?<=[.!?;:,])\s+/);
  const pieces: string[] = [];
  let carry = '';
  for (const part of raw) {
    carry = carry === '' ? part : `${carry} ${part}`;
    if (carry.length >= MIN_PIECE_CHARS) {
      pieces.push(carry);
      carry = '';
    }
  }
  if (carry !== '') {
    if (pieces.length > 0 && carry.length < MIN_PIECE_CHARS) pieces[pieces.length - 1] += ` ${carry}`;
    else pieces.push(carry);
  }
  return pieces;
}
