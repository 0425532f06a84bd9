import { describe, expect, it } from 'vitest';
import { LEAD_IN } from '../../../src/audio/lead-in.ts';
import { PcmOutput } from '../../../src/speech/tts/output.ts';
import { joined } from './collect.ts';

/** `quietMs` of near-silence (±40, far under the voice's level), then a loud tone, at 8 kHz. */
function voiceAfter(quietMs: number, loudMs = 100): Int16Array {
  const quiet = (8000 * quietMs) / 1000;
  const out = new Int16Array(quiet + (8000 * loudMs) / 1000);
  for (let i = 0; i < quiet; i++) out[i] = i % 2 === 0 ? 40 : -40;
  for (let i = quiet; i < out.length; i++) out[i] = Math.round(8000 * Math.sin((2 * Math.PI * 440 * i) / 8000)) || 1000;
  return out;
}

const firstLoud = (samples: Int16Array) => samples.findIndex((s) => Math.abs(s) > 500);

describe('PcmOutput', () => {
  it("drops the voice's silent lead-in, keeping only the pre-roll before the first loud sample", () => {
    const output = new PcmOutput(8000, { trimLeadIn: true });
    const audio = joined([...output.push(voiceAfter(180), 8000), ...output.end()]);
    expect(firstLoud(audio)).toBe((8000 * LEAD_IN.preRollMs) / 1000);
    expect(audio.length).toBeLessThan(voiceAfter(180).length);
  });

  it('finds the voice across pushes: a quiet block alone gives nothing yet', () => {
    const output = new PcmOutput(8000, { trimLeadIn: true });
    const audio = voiceAfter(300);
    expect(output.push(audio.subarray(0, 1600), 8000)).toEqual([]);
    const rest = joined([...output.push(audio.subarray(1600), 8000), ...output.end()]);
    expect(firstLoud(rest)).toBe((8000 * LEAD_IN.preRollMs) / 1000);
  });

  it('keeps the lead-in unless asked to trim it (a caller voice, a bench)', () => {
    const output = new PcmOutput(8000);
    const audio = joined([...output.push(voiceAfter(180), 8000), ...output.end()]);
    expect(firstLoud(audio)).toBe(1440);
  });

  it('still ends an utterance that never gets loud with a frame rather than with nothing', () => {
    const output = new PcmOutput(8000, { trimLeadIn: true });
    const quiet = voiceAfter(100, 0);
    const audio = joined([...output.push(quiet, 8000), ...output.end()]);
    expect(audio.length).toBeGreaterThan(0);
  });
});
