import { describe, expect, it } from 'vitest';
import { muLawDecode } from '../../../src/audio/g711.ts';
import { parseRtp } from '../../../src/carriers/sip/rtp-packet.ts';
import { RtpReceiver } from '../../../src/carriers/sip/rtp-receiver.ts';
import { G722, PCMA, PCMU, RtpSender, type RtpCodec } from '../../../src/carriers/sip/rtp-sender.ts';
import { parseTelephoneEvent } from '../../../src/carriers/sip/telephone-event.ts';
import { ManualTimers } from '../../../src/timers.ts';

const tone = (n = 160) =>
  Int16Array.from({ length: n }, (_, i) => Math.round(8000 * Math.sin((2 * Math.PI * 440 * i) / 8000)));

function sender(options: { telephoneEventType?: number; codec?: RtpCodec } = {}) {
  const timers = new ManualTimers(1000);
  const rtp = new RtpSender({
    codec: options.codec ?? PCMU,
    telephoneEventType: options.telephoneEventType,
    ssrc: 0x1234,
    sequence: 65534,
    timestamp: 4294967200,
    now: () => timers.now(),
  });
  return { timers, rtp };
}

describe('RTP sender', () => {
  it('packs a 20 ms frame as 160 bytes of μ-law, payload type 0, numbering on across the wraps', () => {
    const { rtp, timers } = sender();
    const frame = tone();
    const packets = [0, 1, 2].map(() => {
      const p = parseRtp(rtp.audio(frame)!)!;
      timers.advance(20);
      return p;
    });
    expect(packets.map((p) => p.sequence)).toEqual([65534, 65535, 0]);
    expect(packets.map((p) => p.timestamp)).toEqual([4294967200, 64, 224]);
    expect(packets.map((p) => p.marker)).toEqual([true, false, false]);
    expect(packets.every((p) => p.payloadType === 0 && p.ssrc === 0x1234 && p.payload.length === 160)).toBe(true);
    expect([...muLawDecode(packets[0]!.payload)]).toEqual([...PCMU.decode(PCMU.encode(frame))]);
  });

  it('packs a 20 ms G.722 frame (320 samples at 16 kHz) as 160 bytes of payload type 9, its timestamp advancing 160 per packet (the 8000 clock of the profile)', () => {
    const { rtp, timers } = sender({ codec: G722 });
    const packets = [0, 1, 2].map(() => {
      const p = parseRtp(rtp.audio(tone(320))!)!;
      timers.advance(20);
      return p;
    });
    expect(packets.map((p) => p.timestamp)).toEqual([4294967200, 64, 224]);
    expect(packets.every((p) => p.payloadType === 9 && p.payload.length === 160)).toBe(true);
    // After a 100 ms pause the clock jumps by five packets' worth of 160, as G.711's does.
    timers.advance(100);
    expect(parseRtp(rtp.audio(tone(320))!)!).toMatchObject({ timestamp: 224 + 160 + 5 * 160, marker: true });
  });

  it('uses payload type 8 for A-law', () => {
    const { rtp } = sender({ codec: PCMA });
    expect(parseRtp(rtp.audio(tone())!)!.payloadType).toBe(8);
  });

  it('keeps timestamps back to back for frames sent ahead of time (the pacer leads by up to 80 ms)', () => {
    const { rtp } = sender();
    const stamps = [0, 1, 2, 3].map(() => parseRtp(rtp.audio(tone())!)!.timestamp);
    expect(stamps.map((t) => (t - stamps[0]! + 2 ** 32) % 2 ** 32)).toEqual([0, 160, 320, 480]);
  });

  it('jumps the timestamp by the silence after a pause and marks the first packet of the new talkspurt', () => {
    const { rtp, timers } = sender();
    const first = parseRtp(rtp.audio(tone())!)!;
    timers.advance(20);
    rtp.audio(tone());
    timers.advance(1000);
    const after = parseRtp(rtp.audio(tone())!)!;
    expect(after.marker).toBe(true);
    expect((after.timestamp - first.timestamp + 2 ** 32) % 2 ** 32).toBe(8160);
    expect(after.sequence).toBe((first.sequence + 2) & 0xffff);
  });

  it('sends a key press as telephone events on one timestamp, dropping audio until the last end packet', () => {
    const { rtp, timers } = sender({ telephoneEventType: 101 });
    rtp.audio(tone());
    timers.advance(20);
    const press = rtp.telephoneEvent('#', 100)!;
    const packets = [];
    let dropped = 0;
    for (let p = press.next(); p; p = press.next()) {
      packets.push(parseRtp(p)!);
      if (rtp.audio(tone()) === null) dropped++;
      timers.advance(20);
    }
    expect(dropped).toBe(6);
    expect(packets).toHaveLength(7);
    expect(new Set(packets.map((p) => p.timestamp)).size).toBe(1);
    expect(packets.every((p) => p.payloadType === 101)).toBe(true);
    expect(packets.map((p) => parseTelephoneEvent(p.payload)!.event)).toEqual(Array(7).fill(11));
    expect(packets.map((p) => p.marker)).toEqual([true, false, false, false, false, false, false]);
    const after = parseRtp(rtp.audio(tone())!)!;
    expect(after.sequence).toBe((packets[6]!.sequence + 2) & 0xffff);
    expect(after.timestamp - packets[0]!.timestamp).toBe(8 * 160);
  });

  it('refuses a key press when the far side takes no telephone events, or the key is not on a keypad', () => {
    expect(sender().rtp.telephoneEvent('1', 100)).toBeNull();
    expect(sender({ telephoneEventType: 101 }).rtp.telephoneEvent('x', 100)).toBeNull();
  });
});

describe('RTP receiver', () => {
  it('decodes, reorders, re-frames 10 ms packets to 20 ms, and reports digits once', () => {
    const timers = new ManualTimers();
    const frames: Int16Array[] = [];
    const digits: string[] = [];
    const receiver = new RtpReceiver({
      codec: PCMU,
      telephoneEventType: 101,
      timers,
      onFrame: (f) => frames.push(Int16Array.from(f)),
      onDigit: (d) => digits.push(d),
    });
    const from = sender({ telephoneEventType: 101 });
    const audio = tone(80);
    const packets = [0, 1, 2, 3].map(() => parseRtp(from.rtp.audio(audio)!)!);
    for (const i of [0, 2, 1, 3]) receiver.receive(packets[i]!);
    expect(frames).toHaveLength(2);
    expect(frames.every((f) => f.length === 160)).toBe(true);
    expect([...frames[0]!.subarray(0, 80)]).toEqual([...PCMU.decode(PCMU.encode(audio))]);
    const press = from.rtp.telephoneEvent('7', 60)!;
    for (let p = press.next(); p; p = press.next()) receiver.receive(parseRtp(p)!);
    expect(digits).toEqual(['7']);
    receiver.receive(parseRtp(from.rtp.audio(tone())!)!);
    timers.advance(1000);
    expect(frames).toHaveLength(3);
    expect(receiver.jitterStats.concealed).toBe(0);
  });
});
