// Caller turns held out from every rule of the end of turn (src/call/caller/end-of-turn.ts): written
// on November 28 before any run of them, and never to be tuned on. bench:turns plays them with
// `--set held-out`: phrases in flite's voices, and turns cut from the game voices' human lines
// (bench/sets/game-voices.ts), each category reported on its own.

/** Finished statements and questions. */
export const HELD_OUT_FINISHED = [
  'I want to move my appointment to Thursday.',
  'The heater stopped working last night.',
  'My daughter has a fever.',
  'We are out of paper towels.',
  'I got charged twice this month.',
  'The driver left the box outside.',
  'I need a ride to the airport.',
  'Her flight lands at noon.',
  'Are you open on holidays?',
  'Can someone come out today?',
  'Which plan is cheaper?',
  'Do I need to bring anything?',
  'Is parking free there?',
  'What happens if I miss it?',
];

/** Finished answers that end in a number. */
export const HELD_OUT_DIGITS = [
  'My callback number is five five five, two one eight, four four three nine.',
  'You can reach me at four one five, six six two, zero one eight seven.',
  'The zip is nine four one one five.',
  'It is order number eight eight two.',
  'The last four are three three eight one.',
  'My pin is five five two one.',
  'Room two oh four.',
  'I am in unit twelve.',
];

/** Unfinished turns: the words before a pause, and the rest after it. */
export const HELD_OUT_UNFINISHED: [string, string][] = [
  ['I need her', 'to call me back.'],
  ['Can I get some', 'extra towels?'],
  ['The room was very', 'cold last night.'],
  ['I tried without', 'any luck.'],
  ['We live near', 'the old station.'],
  ['I drove through', 'the tunnel twice.'],
  ['I paid, although', 'it was late.'],
  ['Tell me how', 'to reset it.'],
  ['I want these', 'shoes in blue.'],
  ['My sister would', 'like to come too.'],
  ['The invoice', 'has the wrong date.'],
  ['My reference number is seven one', 'four four nine.'],
  ['Call me at five five five', 'two one eight, four four three nine.'],
  ['The booking was for', 'three people.'],
  ['My neighbor', 'saw the whole thing.'],
  ['We need a table', 'by the window.'],
];

/**
 * A second held-out set of numbers, written on November 28 (session 12) before any run of it and before the end of
 * turn's rules for numbers of no known length changed: finished answers ending in a number, and numbers broken off
 * by a pause. `--set numbers` plays them; never to be tuned on.
 */
export const NUMBERS_FINISHED = [
  'My account number is four four seven nine two one.',
  'The code on the letter is eight one five three.',
  'Please call me back on six five oh, three three one, two two nine eight.',
  'My extension is two one four.',
  'The policy number is five oh oh eight three seven two.',
  'It ends in six two six one.',
  'The confirmation code is nine seven three three one.',
  'My member ID is three one one eight four.',
  'The tracking number is one two seven, seven four four, nine zero.',
  'The card ends in four four one two.',
];

/** Numbers broken off by a pause: the digits before it, and the rest. */
export const NUMBERS_UNFINISHED: [string, string][] = [
  ['My account number is four four', 'seven nine two one.'],
  ['The code is eight one', 'five three.'],
  ['My mobile is nine one seven', 'five five five, zero one four two.'],
  ['The tracking number is one two seven', 'seven four four nine zero.'],
  ['My member ID is three one', 'one eight four.'],
  ['The policy number is five oh oh', 'eight three seven two.'],
];

/** The pauses inside held-out unfinished turns, in turn: as long as a caller thinking mid-sentence. */
export const HELD_OUT_PAUSES_MS = [800, 1000, 1200, 1400];

/** A 10 ms frame this many dB under the utterance's loudest is quiet. */
const QUIET_DB = 35;

/**
 * Where speech is in a recording, in samples: from its first loud 10 ms frame to its last, and each pause of `minMs`
 * or more between (from its first quiet frame to the next loud one).
 */
export function speechPauses(
  samples: Int16Array,
  rate: number,
  minMs: number,
): { start: number; end: number; pauses: { from: number; to: number }[] } | null {
  const frame = rate / 100;
  const frames = Math.floor(samples.length / frame);
  const db = Array.from({ length: frames }, (_, f) => {
    let e = 0;
    for (let i = f * frame; i < (f + 1) * frame; i++) e += (samples[i]! / 32768) ** 2;
    return 10 * Math.log10(e / frame + 1e-12);
  });
  const loudest = Math.max(...db);
  const loud = db.map((d) => d >= loudest - QUIET_DB);
  const first = loud.indexOf(true);
  const last = loud.lastIndexOf(true);
  if (first < 0) return null;
  const pauses: { from: number; to: number }[] = [];
  let quietFrom = -1;
  for (let f = first; f <= last; f++) {
    if (!loud[f]) {
      if (quietFrom < 0) quietFrom = f;
    } else {
      if (quietFrom >= 0 && (f - quietFrom) * 10 >= minMs) pauses.push({ from: quietFrom * frame, to: f * frame });
      quietFrom = -1;
    }
  }
  return { start: first * frame, end: (last + 1) * frame, pauses };
}

/** No sentence ends before the last word ("Mr." and "..." aside). */
export const oneSentence = (text: string): boolean =>
  !/(?<!\b(?:mr|mrs|dr|st))[.?!]+\s+\S/i.test(text.replace(/\.\.\./g, ','));
