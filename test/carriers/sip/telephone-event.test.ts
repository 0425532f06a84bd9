import { describe, expect, it } from 'vitest';
import { parseRtp, type RtpPacket } from '../../../src/carriers/sip/rtp-packet.ts';
import {
  eventOfKey,
  keyOfEvent,
  parseTelephoneEvent,
  telephoneEventPayloads,
  TelephoneEventReceiver,
  writeTelephoneEvent,
} from '../../../src/carriers/sip/telephone-event.ts';

function eventPacket(timestamp: number, event: number, duration: number, end: boolean): RtpPacket {
  return {
    payloadType: 101,
    marker: false,
    sequence: 0,
    timestamp,
    ssrc: 1,
    payload: writeTelephoneEvent({ event, end, volume: 10, duration }),
  };
}

/** A key press as a sender sends it: updates every 160 samples, then the end packet three times. */
function press(timestamp: number, event: number, durationSamples = 800): RtpPacket[] {
  return telephoneEventPayloads(event, durationSamples).map((p) => ({
    ...eventPacket(timestamp, 0, 0, false),
    payload: p.payload,
  }));
}

describe('RFC 4733 telephone events', () => {
  it('writes and reads the four-byte payload: event, end bit, volume, duration', () => {
    const bytes = writeTelephoneEvent({ event: 11, end: true, volume: 10, duration: 800 });
    expect([...bytes]).toEqual([11, 0x8a, 0x03, 0x20]);
    expect(parseTelephoneEvent(bytes)).toEqual({ event: 11, end: true, volume: 10, duration: 800 });
    expect(parseTelephoneEvent(Uint8Array.of(1, 2))).toBeNull();
  });

  it('maps the keypad 0-9 * # A-D to events 0-15 and nothing else', () => {
    expect([...'0123456789*#ABCD'].map(eventOfKey)).toEqual([...Array(16).keys()]);
    expect(eventOfKey('a')).toBe(12);
    expect(eventOfKey('E')).toBeNull();
    expect(eventOfKey('12')).toBeNull();
    expect(keyOfEvent(16)).toBeNull();
  });

  it('sends one press as duration updates, the first marked, then the end packet three times', () => {
    const payloads = telephoneEventPayloads(5, 800);
    const read = payloads.map((p) => ({ ...parseTelephoneEvent(p.payload)!, marker: p.marker }));
    expect(read.map((e) => [e.duration, e.end, e.marker])).toEqual([
      [160, false, true],
      [320, false, false],
      [480, false, false],
      [640, false, false],
      [800, true, false],
      [800, true, false],
      [800, true, false],
    ]);
    expect(read.every((e) => e.event === 5)).toBe(true);
  });

  it('reports each press once, however many update and end packets it arrives as', () => {
    const receiver = new TelephoneEventReceiver();
    const keys = [...press(1000, 1), ...press(5000, 2), ...press(9000, 1)].map((p) => receiver.receive(p));
    expect(keys.filter((k) => k !== null)).toEqual(['1', '2', '1']);
  });

  it('reports a press whose first packets were lost, from its end packet', () => {
    const receiver = new TelephoneEventReceiver();
    expect(receiver.receive(eventPacket(1000, 9, 800, true))).toBe('9');
    expect(receiver.receive(eventPacket(1000, 9, 800, true))).toBeNull();
  });

  it('does not report again a packet of an earlier press that comes late', () => {
    const receiver = new TelephoneEventReceiver();
    expect(receiver.receive(eventPacket(1000, 3, 160, false))).toBe('3');
    expect(receiver.receive(eventPacket(2000, 4, 160, false))).toBe('4');
    expect(receiver.receive(eventPacket(1000, 3, 800, true))).toBeNull();
  });

  it('takes the next segment of a press longer than the duration field as the same press', () => {
    const receiver = new TelephoneEventReceiver();
    expect(receiver.receive(eventPacket(0, 7, 0xffff, false))).toBe('7');
    expect(receiver.receive(eventPacket(0xffff, 7, 160, false))).toBeNull();
    expect(receiver.receive(eventPacket(0xffff, 7, 800, true))).toBeNull();
    expect(receiver.receive(eventPacket(0x20000, 7, 160, false))).toBe('7');
  });

  it('ignores events that are not keypad keys and payloads too short to be events', () => {
    const receiver = new TelephoneEventReceiver();
    expect(receiver.receive(eventPacket(100, 16, 160, false))).toBeNull();
    const short = parseRtp(Buffer.from([0x80, 101, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 5]))!;
    expect(receiver.receive(short)).toBeNull();
  });
});
