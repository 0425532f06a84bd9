import { describe, expect, it } from 'vitest';
import { aLawDecode, aLawEncode, muLawDecode } from '../../../src/audio/g711.ts';
import { RtpReceiver } from '../../../src/carriers/sip/rtp-receiver.ts';
import { parseRtp } from '../../../src/carriers/sip/rtp-packet.ts';
import { PCMA, PCMU, RtpSender, type G711Codec } from '../../../src/carriers/sip/rtp-sender.ts';
import { ManualTimers } from '../../../src/timers.ts';
import { fixtureUlaw } from '../../helpers/phone.ts';

/**
 * A recorded phrase sent as a phone sends it, 20 ms packets of `codec`, each read from one reused datagram buffer (a
 * payload is a view into it); returns every frame handed on, kept by reference as a queued reader keeps it, and the
 * audio the line carried.
 */
function receivePhrase(codec: G711Codec): { frames: Int16Array[]; line: Int16Array } {
  const timers = new ManualTimers(0);
  const frames: Int16Array[] = [];
  const receiver = new RtpReceiver({
    codec,
    timers,
    onFrame: (frame, concealed) => {
      expect(concealed).toBe(false);
      frames.push(frame);
    },
    onDigit: () => undefined,
  });
  const pcm = muLawDecode(fixtureUlaw('01-my-name-is-john'));
  // What the line carries is the phrase through the codec: the receiver can only give that back.
  const line = codec === PCMA ? aLawDecode(aLawEncode(pcm)) : pcm;
  const sender = new RtpSender({
    codec,
    payloadType: codec.payloadType,
    ssrc: 7,
    sequence: 65530,
    timestamp: 0,
    now: () => timers.now(),
  });
  const datagram = Buffer.alloc(1500);
  const whole = line.length - (line.length % 160);
  for (let at = 0; at < whole; at += 160) {
    const packet = sender.audio(pcm.subarray(at, at + 160))!;
    packet.copy(datagram);
    receiver.receive(parseRtp(datagram.subarray(0, packet.length))!);
    timers.advance(20);
  }
  receiver.close();
  return { frames, line: line.subarray(0, whole) };
}

describe('RtpReceiver', () => {
  it.each([
    ['PCMU', PCMU],
    ['PCMA', PCMA],
  ] as const)(
    'hands on a real phrase in %s as the session takes it: 20 ms frames of the decoded audio, in order, each its own buffer that later packets leave alone',
    (_name, codec) => {
      const { frames, line } = receivePhrase(codec);
      expect(frames).toHaveLength(line.length / 160);
      for (const frame of frames) expect(frame.length).toBe(160);
      // Checked after every packet went through: a frame a later packet overwrote would differ here.
      const joined = new Int16Array(line.length);
      frames.forEach((frame, i) => joined.set(frame, i * 160));
      expect(joined).toEqual(line);
      expect(new Set(frames.map((frame) => frame.buffer)).size).toBe(frames.length);
    },
  );
});
