// Keypad digits as RTP telephone events (RFC 4733 §2.3): each packet carries one event's number,
// whether it has ended, its volume and how long it has lasted so far, all stamped with the RTP
// timestamp of the event's start. A sender updates the duration every packet time and sends the
// final (end) packet three times; so one key press arrives as several packets, and the receiver
// must report it once.
//
//  0                   1                   2                   3
//  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
// |     event     |E|R| volume    |          duration             |
import type { RtpPacket } from './rtp-packet.ts';

export const TELEPHONE_EVENT_BYTES = 4;
/** Events 0–15: the keypad (§3.2). Higher numbers (flash, tones) are not digits and are ignored. */
const KEYS = '0123456789*#ABCD';
/** The largest duration field; a longer event is sent in segments (§2.5.1.3). */
const MAX_DURATION = 0xffff;
/** Times the final packet of an event is sent (§2.5.1.4). */
export const END_PACKET_COPIES = 3;

export interface TelephoneEvent {
  /** 0–255; 0–15 are the keypad keys. */
  event: number;
  end: boolean;
  /** Power level of the tone, 0–63, as −dBm0. */
  volume: number;
  /** Timestamp units (1/8000 s) since the event's start. */
  duration: number;
}

export function parseTelephoneEvent(payload: Uint8Array): TelephoneEvent | null {
  if (payload.length < TELEPHONE_EVENT_BYTES) return null;
  return {
    event: payload[0]!,
    end: (payload[1]! & 0x80) !== 0,
    volume: payload[1]! & 0x3f,
    duration: (payload[2]! << 8) | payload[3]!,
  };
}

export function writeTelephoneEvent(e: TelephoneEvent): Uint8Array {
  const duration = Math.min(MAX_DURATION, Math.max(0, Math.round(e.duration)));
  return Uint8Array.of(e.event & 0xff, (e.end ? 0x80 : 0) | (e.volume & 0x3f), duration >> 8, duration & 0xff);
}

/** The keypad key of an event number, or null when it is not one. */
export function keyOfEvent(event: number): string | null {
  return event < KEYS.length ? KEYS[event]! : null;
}

/** The event number of a keypad key, or null when `key` is not one of 0–9, *, #, A–D. */
export function eventOfKey(key: string): number | null {
  const index = key.length === 1 ? KEYS.indexOf(key.toUpperCase()) : -1;
  return index === -1 ? null : index;
}

/** Event timestamps remembered, so a packet of an event already reported is known however late it comes. */
const REMEMBERED_EVENTS = 16;

/**
 * Keypad digits out of a stream of telephone-event packets, each key press once: the first
 * packet of an event (a timestamp not seen yet) reports it, and the updates, the end packet and
 * its copies, and late packets of any of the last events say nothing. A segment that continues a
 * long event (a new timestamp right after a segment that reached the longest duration without
 * ending, for the same key) is not a new press.
 */
export class TelephoneEventReceiver {
  private readonly seen: number[] = [];
  private last: { timestamp: number; event: number; ended: boolean; duration: number } | null = null;

  receive(packet: RtpPacket): string | null {
    const e = parseTelephoneEvent(packet.payload);
    if (!e) return null;
    const last = this.last;
    if (last && last.timestamp === packet.timestamp) {
      last.ended ||= e.end;
      last.duration = Math.max(last.duration, e.duration);
      return null;
    }
    if (this.seen.includes(packet.timestamp)) return null;
    this.remember(packet.timestamp);
    const continues = last !== null && !last.ended && last.event === e.event && last.duration >= MAX_DURATION - 800;
    this.last = { timestamp: packet.timestamp, event: e.event, ended: e.end, duration: e.duration };
    return continues ? null : keyOfEvent(e.event);
  }

  private remember(timestamp: number): void {
    this.seen.push(timestamp);
    if (this.seen.length > REMEMBERED_EVENTS) this.seen.shift();
  }
}

/**
 * The payloads that send one key press lasting `durationSamples`, one per packet time
 * (`packetSamples`, 160 for 20 ms at 8 kHz): updates with the duration so far, the first one
 * marked (§2.5.1.1), then the end packet END_PACKET_COPIES times. All share the event's timestamp.
 */
export function telephoneEventPayloads(
  event: number,
  durationSamples: number,
  options: { packetSamples?: number; volume?: number } = {},
): { payload: Uint8Array; marker: boolean }[] {
  const step = options.packetSamples ?? 160;
  const volume = options.volume ?? 10;
  const total = Math.min(MAX_DURATION, Math.max(step, Math.round(durationSamples)));
  const out: { payload: Uint8Array; marker: boolean }[] = [];
  for (let lasted = step; lasted < total; lasted += step)
    out.push({
      payload: writeTelephoneEvent({ event, end: false, volume, duration: lasted }),
      marker: out.length === 0,
    });
  for (let copy = 0; copy < END_PACKET_COPIES; copy++)
    out.push({ payload: writeTelephoneEvent({ event, end: true, volume, duration: total }), marker: out.length === 0 });
  return out;
}
