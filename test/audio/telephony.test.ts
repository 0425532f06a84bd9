import { describe, expect, it } from 'vitest';
import { concatPcm } from '../../src/audio/pcm.ts';
import { muLawDecode, muLawEncode } from '../../src/audio/g711.ts';
import { CarrierAudioIn, CarrierAudioOut } from '../../src/audio/telephony.ts';
import { amplitudeAt, db, tone } from './signals.ts';

describe('carrier audio edge', () => {
  it('turns 160-byte μ-law frames at 8 kHz into 320-sample PCM16 frames at 16 kHz, tone intact', () => {
    const carrier = muLawEncode(tone(1000, 8000, 1));
    const inbound = new CarrierAudioIn();
    const frames: Int16Array[] = [];
    for (let offset = 0; offset < carrier.length; offset += 160)
      frames.push(...inbound.push(carrier.subarray(offset, offset + 160)));
    frames.push(...inbound.flush());
    expect(frames.every((f) => f.length === 320)).toBe(true);
    expect(frames.length).toBe(50);
    expect(Math.abs(db(amplitudeAt(concatPcm(frames).subarray(1600, -1600), 1000, 16000) / 10000))).toBeLessThan(1);
  });

  it('turns internal frames into 160-byte carrier frames and back, A-law too', () => {
    for (const encoding of ['mulaw', 'alaw'] as const) {
      const outbound = new CarrierAudioOut({ encoding });
      const inbound = new CarrierAudioIn({ encoding });
      const speech = tone(700, 16000, 0.5);
      const bytes: Uint8Array[] = [];
      for (let offset = 0; offset < speech.length; offset += 320)
        bytes.push(...outbound.push(speech.subarray(offset, offset + 320)));
      bytes.push(...outbound.flush());
      expect(bytes.every((b) => b.length === 160)).toBe(true);
      const back = concatPcm(bytes.flatMap((b) => inbound.push(b)));
      expect(Math.abs(db(amplitudeAt(back.subarray(800, -800), 700, 16000) / 10000))).toBeLessThan(1);
    }
  });

  it('at an internal rate of 8 kHz hands over the decoded carrier frames as they are, odd payloads framed', () => {
    const carrier = muLawEncode(tone(1000, 8000, 0.2));
    const inbound = new CarrierAudioIn({ internalRate: 8000 });
    const frames = [
      ...inbound.push(carrier.subarray(0, 160)),
      ...inbound.push(carrier.subarray(160, 260)),
      ...inbound.push(carrier.subarray(260, 480)),
    ];
    expect(frames.map((f) => f.length)).toEqual([160, 160, 160]);
    expect(Array.from(concatPcm(frames))).toEqual(Array.from(muLawDecode(carrier.subarray(0, 480))));
  });
});
