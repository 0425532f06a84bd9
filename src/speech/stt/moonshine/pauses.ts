// Moonshine, given a stretch of audio with a long quiet inside it, sometimes ends its text at the quiet and never reads
// what follows: a caller's "My mobile is nine one seven … five five five, zero one four two." came back as "My mobile
// is 917." in 6 of 9 runs of bench:turns --set numbers, and the agent never heard the rest of the number. Whether it
// stops depends on the pause's exact length, not on its being long (one voice stopped at 800 ms and read past
// 1,200 ms). With every pause inside the audio shortened to 500 ms, the held-out set's broken-off turns read whole at
// every pause length tried (bench/README.md, "A pause inside a reading").
import { FRAME_MS, rms, samplesPerFrame } from '../../../audio/pcm.ts';
import { PAUSE_CUTTER_DEFAULTS } from '../pause-cutter.ts';

export const PAUSE_DEFAULTS = {
  /**
   * The longest quiet kept inside a reading. bench:inner-pauses: 500 and 700 ms stopped at no pause (WER 10.8%, 10.7%),
   * 1,000 ms at 4 of 352 as before. At 300 ms, the stream's own pause, the model ran a phone menu's two voices into
   * one garbled sentence ("press too, you have reached the point-mint goodbye"; test/e2e/keypad.test.ts).
   */
  keepMs: 500,
} as const;

/**
 * The audio with each quiet stretch between its first and last speech shortened to `keepMs`, half of it kept from each
 * end of the stretch (the fade of the words before it and the breath before the next). Quiet is PauseCutter's: a 20 ms
 * frame 20 dB under the loudest, or under the line-noise floor. The quiet before the first speech and after the last
 * stay whole: the model punctuates the end of a phrase partly from the quiet after it.
 */
export function shortenPauses(
  samples: Int16Array,
  sampleRate: number,
  keepMs: number = PAUSE_DEFAULTS.keepMs,
): Int16Array {
  const frame = samplesPerFrame(sampleRate);
  const frames = Math.floor(samples.length / frame);
  const levels = Array.from({ length: frames }, (_, i) => rms(samples.subarray(i * frame, (i + 1) * frame)));
  const floor = Math.max(Math.max(0, ...levels) / PAUSE_CUTTER_DEFAULTS.quietRatio, PAUSE_CUTTER_DEFAULTS.quietFloor);
  const quiet = levels.map((level) => level < floor);
  const first = quiet.indexOf(false);
  const last = quiet.lastIndexOf(false);
  const keep = Math.max(2, Math.round(keepMs / FRAME_MS));
  /** Frames [from, to) dropped from each long quiet stretch inside the speech. */
  const dropped: [number, number][] = [];
  for (let i = first + 1; first >= 0 && i < last; i++) {
    if (!quiet[i]) continue;
    let end = i;
    while (end < last && quiet[end]) end++;
    if (end - i > keep) dropped.push([i + Math.floor(keep / 2), end - Math.ceil(keep / 2)]);
    i = end;
  }
  if (dropped.length === 0) return samples;
  const out = new Int16Array(samples.length - dropped.reduce((n, [from, to]) => n + (to - from) * frame, 0));
  let read = 0;
  let written = 0;
  for (const [from, to] of dropped) {
    out.set(samples.subarray(read, from * frame), written);
    written += from * frame - read;
    read = to * frame;
  }
  out.set(samples.subarray(read), written);
  return out;
}
