import { describe, expect, it } from 'vitest';
import {
  carriesVoice,
  fadedIn,
  LEAD_IN,
  LeadInTrimmer,
  onsetThreshold,
  trimLeadIn,
  voiceOnset,
  voiceStart,
} from '../../src/audio/lead-in.ts';

const RATE = 8000;
const WINDOW = 40; // 5 ms at 8 kHz
const PRE_ROLL = 80; // 10 ms
const FADE = 40; // 5 ms
const PIECE_GAP = 800; // 100 ms

/**
 * `quietMs` of a voice's lead-in noise — mostly zero, one sample of 150 (above −50 dBFS) every 40, so
 * single samples poke out while every 5 ms window stays far under the voice — then `loudMs` of a
 * square wave of ±`amplitude` (its RMS is exactly `amplitude`).
 */
function voiceAfter(quietMs: number, loudMs = 100, amplitude = 8000): Int16Array {
  const quiet = (RATE * quietMs) / 1000;
  const out = new Int16Array(quiet + (RATE * loudMs) / 1000);
  for (let i = 0; i < quiet; i += WINDOW) out[i + 7] = 150;
  for (let i = quiet; i < out.length; i++) out[i] = i % 2 === 0 ? amplitude : -amplitude;
  return out;
}

/** Everything a trimmer gives for `audio` pushed in chunks of `size`, then its end. */
function streamed(trimmer: LeadInTrimmer, audio: Int16Array, size: number): Int16Array {
  const parts: Int16Array[] = [];
  for (let at = 0; at < audio.length; at += size) parts.push(trimmer.push(audio.subarray(at, at + size)));
  parts.push(trimmer.end());
  const out = new Int16Array(parts.reduce((n, p) => n + p.length, 0));
  let offset = 0;
  for (const p of parts) {
    out.set(p, offset);
    offset += p.length;
  }
  return out;
}

describe('lead-in', () => {
  it('finds the voice at the first 5 ms window within 35 dB of its level, not at a lone loud sample of the noise', () => {
    const audio = voiceAfter(180);
    expect(LEAD_IN.windowMs * (RATE / 1000)).toBe(WINDOW);
    expect(onsetThreshold(LEAD_IN.defaultLevel)).toBeCloseTo(184.3, 1);
    expect(audio.findIndex((s) => Math.abs(s) > 100)).toBe(7);
    expect(voiceOnset(audio, WINDOW, onsetThreshold(LEAD_IN.defaultLevel))).toBe(1440);
  });

  it('never counts a window under the −55 dBFS floor as the voice, however quiet the voice', () => {
    expect(onsetThreshold(100)).toBe(LEAD_IN.floor);
    expect(voiceOnset(voiceAfter(50, 50, 57), WINDOW, onsetThreshold(100))).toBe(-1);
    expect(voiceOnset(voiceAfter(50, 50, 58), WINDOW, onsetThreshold(100))).toBe(400);
  });

  it('takes in the rise before the onset (a soft "sh" within 8 dB of it), back 25 ms at most', () => {
    /** 180 ms of lead-in noise ending in `softMs` of a ±80 square (RMS 80: under the onset, over its rise). */
    const softStart = (softMs: number) => {
      const audio = voiceAfter(180);
      audio.fill(80, 1440 - 8 * softMs, 1440);
      for (let i = 1440 - 8 * softMs; i < 1440; i += 2) audio[i] = -80;
      return audio;
    };
    expect(LEAD_IN.riseMs).toBe(25);
    expect(voiceStart(softStart(20), RATE, LEAD_IN.defaultLevel)).toBe(1440 - 160);
    expect(voiceStart(softStart(50), RATE, LEAD_IN.defaultLevel)).toBe(1440 - 200);
    expect(voiceStart(voiceAfter(180), RATE, LEAD_IN.defaultLevel)).toBe(1440);
    const audio = softStart(20);
    expect(streamed(new LeadInTrimmer(RATE, { first: true }), audio, 7)).toEqual(trimLeadIn(audio, RATE, PRE_ROLL));
    expect(trimLeadIn(audio, RATE, PRE_ROLL)).toHaveLength(PRE_ROLL + 160 + 800);
  });

  it("cuts a reply's lead-in to the 10 ms pre-roll before the onset, faded in from zero", () => {
    const audio = voiceAfter(180);
    const trimmed = trimLeadIn(audio, RATE, PRE_ROLL);
    expect(trimmed.length).toBe(PRE_ROLL + 800);
    expect(trimmed[0]).toBe(0);
    // The fade covers the first 5 ms of the pre-roll (lead-in noise); from there on the audio is untouched.
    expect(trimmed.subarray(FADE)).toEqual(audio.subarray(1440 - PRE_ROLL + FADE));
    expect(voiceOnset(trimmed, WINDOW, onsetThreshold(LEAD_IN.defaultLevel))).toBe(PRE_ROLL);
  });

  it('ramps the kept start up linearly over the fade, so the cut makes no click', () => {
    const faded = fadedIn(new Int16Array(60).fill(1000), FADE);
    expect(Array.from(faded.subarray(0, 5))).toEqual([0, 25, 50, 75, 100]);
    expect(faded[39]).toBe(975);
    expect(Array.from(faded.subarray(40))).toEqual(new Array(20).fill(1000));
  });

  it('leaves audio whose lead-in is no longer than what may be kept exactly as it was', () => {
    const audio = voiceAfter(10);
    expect(trimLeadIn(audio, RATE, PRE_ROLL)).toBe(audio);
    expect(trimLeadIn(voiceAfter(50, 0), RATE, PRE_ROLL)).toHaveLength(400);
  });

  it('gives the same audio whatever the chunks: a first chunk that is all lead-in gives nothing yet', () => {
    const audio = voiceAfter(300);
    const whole = trimLeadIn(audio, RATE, PRE_ROLL);
    for (const size of [1, 7, 39, 160, 1600, audio.length]) {
      expect(streamed(new LeadInTrimmer(RATE, { first: true }), audio, size)).toEqual(whole);
    }
    const trimmer = new LeadInTrimmer(RATE, { first: true });
    expect(trimmer.push(audio.subarray(0, 1600))).toHaveLength(0);
    expect(trimmer.push(audio.subarray(1600, 2400))).toHaveLength(0);
    // The voice's first window: out come the pre-roll held back and the window itself.
    expect(trimmer.push(audio.subarray(2400, 2440))).toHaveLength(PRE_ROLL + WINDOW);
  });

  it("keeps up to 100 ms of a later sentence's lead-in: the pause between sentences stays natural", () => {
    const long = voiceAfter(180);
    const later = streamed(new LeadInTrimmer(RATE, { first: false }), long, 160);
    expect(later.length).toBe(PIECE_GAP + 800);
    expect(later.subarray(FADE)).toEqual(long.subarray(1440 - PIECE_GAP + FADE));
    const short = voiceAfter(60);
    expect(streamed(new LeadInTrimmer(RATE, { first: false }), short, 160)).toEqual(short);
  });

  it("counts what it cut, so a voice's word times can be moved that much sooner", () => {
    const trimmer = new LeadInTrimmer(RATE, { first: true });
    streamed(trimmer, voiceAfter(180), 160);
    expect(trimmer.cut).toBe(1440 - PRE_ROLL);
  });

  it('ends a synthesis that never gets loud with its last pre-roll, faded in, rather than with nothing', () => {
    const trimmer = new LeadInTrimmer(RATE, { first: true });
    const out = streamed(trimmer, voiceAfter(100, 0), 160);
    expect(out).toHaveLength(PRE_ROLL);
    expect(trimmer.cut).toBe(800 - PRE_ROLL);
    expect(trimmer.voiceLevel).toBe(LEAD_IN.defaultLevel);
  });

  it("learns the voice's level from what it said, so a quiet voice's start is found against its own level", () => {
    const quietVoice = voiceAfter(180, 100, 150);
    // Against a loud voice's level the quiet voice's start reads as lead-in: nothing is found.
    expect(streamed(new LeadInTrimmer(RATE, { first: true }), quietVoice, 160)).toHaveLength(PRE_ROLL);
    const learning = new LeadInTrimmer(RATE, { first: true, level: 150 });
    expect(streamed(learning, quietVoice, 160)).toHaveLength(PRE_ROLL + 800);
    expect(learning.voiceLevel).toBe(150);
    const loud = new LeadInTrimmer(RATE, { first: true, level: 150 });
    streamed(loud, voiceAfter(20, 20, 9000), 160);
    expect(loud.voiceLevel).toBe(9000);
  });

  it('tells a frame that carries the voice from one of lead-in noise', () => {
    const audio = voiceAfter(180);
    expect(carriesVoice(audio.subarray(0, 160), RATE)).toBe(false);
    expect(carriesVoice(trimLeadIn(audio, RATE, PRE_ROLL).subarray(0, 160), RATE)).toBe(true);
  });
});
