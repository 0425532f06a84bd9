import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { SipError } from '../../../src/carriers/sip/errors.ts';
import { G722, PCMA, PCMU } from '../../../src/carriers/sip/rtp-sender.ts';
import { answerOffer, createOffer, parseSdp, readAnswer } from '../../../src/carriers/sip/sdp.ts';
import { FUZZ_SEED, runs } from '../../helpers/fuzz.ts';

const local = { address: '198.51.100.7', port: 20000, sessionId: '42', sessionVersion: 1 };

/** An offer as a softphone sends it: Opus and G.722 first, then G.711, telephone-event on 101. */
const softphoneOffer = [
  'v=0',
  'o=- 1394 1394 IN IP4 192.0.2.10',
  's=-',
  'c=IN IP4 192.0.2.10',
  't=0 0',
  'm=audio 40002 RTP/AVP 96 9 8 0 101',
  'a=rtpmap:96 opus/48000/2',
  'a=rtpmap:9 G722/8000',
  'a=rtpmap:8 PCMA/8000',
  'a=rtpmap:0 PCMU/8000',
  'a=rtpmap:101 telephone-event/8000',
  'a=fmtp:101 0-15',
  'a=ptime:20',
  'a=sendrecv',
  '',
].join('\r\n');

function codeOf(run: () => unknown): string | undefined {
  try {
    run();
  } catch (error) {
    return error instanceof SipError ? error.code : 'not a SipError';
  }
  return undefined;
}

describe('SDP', () => {
  it('reads the audio stream of an offer: port, formats, rtpmaps, ptime, direction and address', () => {
    const sdp = parseSdp(softphoneOffer);
    expect(sdp.origin.address).toBe('192.0.2.10');
    const m = sdp.media[0]!;
    expect(m).toMatchObject({ media: 'audio', port: 40002, protocol: 'RTP/AVP', address: '192.0.2.10' });
    expect(m.formats).toEqual(['96', '9', '8', '0', '101']);
    expect(m.rtpmaps.get(96)).toEqual({ encoding: 'opus', clockRate: 48000, channels: 2 });
    expect(m.fmtps.get(101)).toBe('0-15');
    expect(m.ptime).toBe(20);
    expect(m.direction).toBe('sendrecv');
  });

  it('answers G.722 when the offer has it, written G722/8000 (the profile’s clock rate), and telephone-event on the offer’s type', () => {
    const { answer, media } = answerOffer(softphoneOffer, local);
    expect(media).toMatchObject({
      codec: G722,
      payloadType: 9,
      telephoneEventType: 101,
      remote: { address: '192.0.2.10', port: 40002 },
      direction: 'sendrecv',
      onHold: false,
    });
    expect(answer).toBe(
      [
        'v=0',
        'o=- 42 1 IN IP4 198.51.100.7',
        's=-',
        'c=IN IP4 198.51.100.7',
        't=0 0',
        'm=audio 20000 RTP/AVP 9 101',
        'a=rtpmap:9 G722/8000',
        'a=rtpmap:101 telephone-event/8000',
        'a=fmtp:101 0-16',
        'a=ptime:20',
        'a=sendrecv',
        '',
      ].join('\r\n'),
    );
  });

  it('prefers G.722 wherever the offer lists it, and otherwise answers the first G.711 of the offer’s order', () => {
    const g722Last = softphoneOffer.replace('RTP/AVP 96 9 8 0 101', 'RTP/AVP 0 8 9 101');
    expect(answerOffer(g722Last, local).media).toMatchObject({ codec: G722, payloadType: 9 });
    const bareG722 = softphoneOffer
      .replace('RTP/AVP 96 9 8 0 101', 'RTP/AVP 0 9')
      .replace('a=rtpmap:9 G722/8000\r\n', '');
    expect(answerOffer(bareG722, local).media).toMatchObject({ codec: G722, payloadType: 9 });
    const narrowband = softphoneOffer.replace('RTP/AVP 96 9 8 0 101', 'RTP/AVP 96 8 0 101');
    expect(answerOffer(narrowband, local).media).toMatchObject({ codec: PCMA, payloadType: 8 });
    // A G.722 the offer writes at 16000 is not the profile's G722/8000, so it is not taken as G.722.
    const misclocked = softphoneOffer.replace('G722/8000', 'G722/16000');
    expect(answerOffer(misclocked, local).media).toMatchObject({ codec: PCMA });
  });

  it('takes a static payload type without an rtpmap, and a G.711 codec mapped to a dynamic type', () => {
    const bare = 'v=0\r\no=- 1 1 IN IP4 192.0.2.1\r\ns=-\r\nc=IN IP4 192.0.2.1\r\nt=0 0\r\nm=audio 5004 RTP/AVP 0\r\n';
    expect(answerOffer(bare, local).media).toMatchObject({
      codec: PCMU,
      payloadType: 0,
      telephoneEventType: undefined,
    });
    const dynamic = bare.replace('RTP/AVP 0', 'RTP/AVP 97').concat('a=rtpmap:97 pcmu/8000\r\n');
    expect(answerOffer(dynamic, local).media).toMatchObject({ codec: PCMU, payloadType: 97 });
  });

  it('answers every other stream with port 0, keeping the m-lines in order', () => {
    const offer = softphoneOffer.replace('m=audio', 'm=video 40004 RTP/AVP 96\r\nm=audio');
    const { answer } = answerOffer(offer, local);
    const mLines = answer.split('\r\n').filter((l) => l.startsWith('m='));
    expect(mLines).toEqual(['m=video 0 RTP/AVP 96', 'm=audio 20000 RTP/AVP 9 101']);
  });

  it('answers a hold (sendonly, inactive, or the old c=0.0.0.0) with the mirror direction and says it is held', () => {
    const sendonly = answerOffer(softphoneOffer.replace('a=sendrecv', 'a=sendonly'), local);
    expect(sendonly.media).toMatchObject({ direction: 'recvonly', onHold: true });
    expect(sendonly.answer).toContain('a=recvonly\r\n');
    expect(answerOffer(softphoneOffer.replace('a=sendrecv', 'a=inactive'), local).media.direction).toBe('inactive');
    const zero = answerOffer(softphoneOffer.replace('c=IN IP4 192.0.2.10', 'c=IN IP4 0.0.0.0'), local);
    expect(zero.media).toMatchObject({ direction: 'inactive', onHold: true });
  });

  it('refuses an offer with no G.722 or G.711 over RTP/AVP (SIP_NO_COMMON_CODEC, answered 488)', () => {
    const opusOnly = softphoneOffer.replace('RTP/AVP 96 9 8 0 101', 'RTP/AVP 96 18');
    expect(codeOf(() => answerOffer(opusOnly, local))).toBe('SIP_NO_COMMON_CODEC');
    const srtp = softphoneOffer.replace('RTP/AVP', 'RTP/SAVP');
    expect(codeOf(() => answerOffer(srtp, local))).toBe('SIP_NO_COMMON_CODEC');
    expect(codeOf(() => answerOffer(softphoneOffer.replace('40002', '0'), local))).toBe('SIP_NO_COMMON_CODEC');
  });

  it('refuses what is not SDP (SIP_BAD_SDP): no v=0, no o=, no m=, a broken line, an oversized body', () => {
    expect(codeOf(() => parseSdp('hello'))).toBe('SIP_BAD_SDP');
    expect(codeOf(() => parseSdp(softphoneOffer.replace(/o=[^\r]*\r\n/, '')))).toBe('SIP_BAD_SDP');
    expect(codeOf(() => parseSdp('v=0\r\no=- 1 1 IN IP4 192.0.2.1\r\ns=-\r\n'))).toBe('SIP_BAD_SDP');
    expect(codeOf(() => parseSdp(softphoneOffer.replace('s=-', 'garbage')))).toBe('SIP_BAD_SDP');
    expect(codeOf(() => parseSdp(softphoneOffer.replace('m=audio 40002', 'm=audio 70000')))).toBe('SIP_BAD_SDP');
    expect(codeOf(() => parseSdp(softphoneOffer + 'a=x\r\n'.repeat(5000)))).toBe('SIP_BAD_SDP');
  });

  it('answers any body with an answer or a SipError (SIP_BAD_SDP or SIP_NO_COMMON_CODEC), never another throw', () => {
    const lines = softphoneOffer.split('\r\n');
    const body = fc.oneof(
      fc.string({ maxLength: 300 }),
      // The offer with lines dropped, repeated or replaced by arbitrary text.
      fc
        .array(fc.oneof(fc.constantFrom(...lines), fc.string({ maxLength: 40 })), { maxLength: 30 })
        .map((picked) => ['v=0', ...picked].join('\r\n')),
    );
    fc.assert(
      fc.property(body, (text) => {
        const code = codeOf(() => answerOffer(text, local));
        expect([undefined, 'SIP_BAD_SDP', 'SIP_NO_COMMON_CODEC']).toContain(code);
      }),
      { seed: FUZZ_SEED, numRuns: runs(1000) },
    );
  });

  it('offers G.722 first, then PCMU, PCMA and telephone-event, and reads the answer back', () => {
    const offer = createOffer({ ...local, address: '2001:db8::7' });
    expect(offer).toContain('c=IN IP6 2001:db8::7\r\n');
    expect(offer).toContain('m=audio 20000 RTP/AVP 9 0 8 101\r\na=rtpmap:9 G722/8000\r\na=rtpmap:0 PCMU/8000\r\n');
    const narrowband = answerOffer(offer, {
      address: '192.0.2.99',
      port: 30000,
      sessionId: '9',
      sessionVersion: 1,
      codecs: [PCMU, PCMA],
    });
    expect(readAnswer(narrowband.answer).codec).toBe(PCMU);
    const { answer } = answerOffer(offer, { address: '192.0.2.99', port: 30000, sessionId: '9', sessionVersion: 1 });
    expect(readAnswer(answer)).toMatchObject({
      codec: G722,
      payloadType: 9,
      telephoneEventType: 101,
      remote: { address: '192.0.2.99', port: 30000 },
      direction: 'sendrecv',
    });
  });
});
