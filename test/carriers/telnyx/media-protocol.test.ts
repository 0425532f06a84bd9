import { describe, expect, it } from 'vitest';
import {
  MediaReorder,
  mediaOrder,
  parseTelnyxMessage,
  TELNYX_CLEAR,
  telnyxMark,
  telnyxMedia,
  type TelnyxMedia,
} from '../../../src/carriers/telnyx/media-protocol.ts';

// The messages as Telnyx's media streaming documentation shows them.
const START = {
  event: 'start',
  sequence_number: '1',
  start: {
    user_id: '3E6F995F-85F7-4705-9741-53B116D28237',
    call_control_id: 'v3:abc',
    client_state: 'aGF2ZSBhIG5pY2UgZGF5ID1d',
    media_format: { encoding: 'PCMU', sample_rate: 8000, channels: 1 },
    custom_parameters: { call_id: 'call_1', secret: 's' },
  },
  stream_id: '32DE0DEA-53CB-4B21-89A4-9E1819C043BC',
};
const MEDIA = {
  event: 'media',
  sequence_number: '4',
  media: {
    track: 'inbound',
    chunk: '2',
    timestamp: '5',
    payload: 'no+JhoaJjpzSHxAKBgYJDhtEopGKh4aIjZm7JhILBwYIDBc1qZaLh4aHi5Rk',
  },
  stream_id: START.stream_id,
};

describe('Telnyx media stream messages', () => {
  it('reads connected, start, media, dtmf, mark, error and stop as documented', () => {
    const read = (value: unknown) => parseTelnyxMessage(JSON.stringify(value));
    expect(read({ event: 'connected', version: '1.0.0' })).toMatchObject({ ok: true, message: { event: 'connected' } });
    expect(read(START)).toMatchObject({
      ok: true,
      message: {
        stream_id: START.stream_id,
        start: { call_control_id: 'v3:abc', custom_parameters: { call_id: 'call_1' } },
      },
    });
    expect(read(MEDIA)).toMatchObject({ ok: true, message: { media: { chunk: '2', payload: MEDIA.media.payload } } });
    expect(
      read({
        event: 'dtmf',
        stream_id: 'x',
        occurred_at: '2024-01-01T00:00:00Z',
        sequence_number: '5',
        dtmf: { digit: '1' },
      }),
    ).toMatchObject({
      ok: true,
      message: { dtmf: { digit: '1' } },
    });
    expect(read({ event: 'mark', sequence_number: '6', stream_id: 'x', mark: { name: 'm1' } })).toMatchObject({
      ok: true,
      message: { mark: { name: 'm1' } },
    });
    expect(
      read({
        event: 'error',
        sequence_number: '7',
        stream_id: 'x',
        payload: { code: 100002, title: 'Unknown error', detail: 'd' },
      }),
    ).toMatchObject({
      ok: true,
      message: { event: 'error', payload: { code: 100002 } },
    });
    expect(
      read({ event: 'stop', sequence_number: '8', stop: { user_id: 'u', call_control_id: 'v3:abc' }, stream_id: 'x' }),
    ).toMatchObject({
      ok: true,
      message: { event: 'stop' },
    });
  });

  it('a start without custom parameters reads as none (a stream without its secret is then refused)', () => {
    const { custom_parameters: _p, ...start } = START.start;
    const parsed = parseTelnyxMessage(JSON.stringify({ ...START, start }));
    expect(parsed.ok && parsed.message.event === 'start' && parsed.message.start.custom_parameters).toEqual({});
  });

  it('says why it refused a message: not JSON, a payload that is not base64, an unknown event, a chunk that is not a number', () => {
    expect(parseTelnyxMessage('{')).toEqual({ ok: false, reason: 'not JSON' });
    expect(
      parseTelnyxMessage(JSON.stringify({ ...MEDIA, media: { ...MEDIA.media, payload: 'not base64!' } })),
    ).toMatchObject({ ok: false });
    expect(parseTelnyxMessage(JSON.stringify({ ...MEDIA, media: { ...MEDIA.media, chunk: 'two' } }))).toMatchObject({
      ok: false,
    });
    expect(parseTelnyxMessage(JSON.stringify({ event: 'mystery' }))).toMatchObject({ ok: false });
    expect(parseTelnyxMessage(JSON.stringify({ event: 'dtmf', dtmf: { digit: '12' } }))).toMatchObject({ ok: false });
  });

  it('writes media, mark and clear as Telnyx takes them', () => {
    expect(JSON.parse(telnyxMedia('AAEC'))).toEqual({ event: 'media', media: { payload: 'AAEC' } });
    expect(JSON.parse(telnyxMark('turn-1"x'))).toEqual({ event: 'mark', mark: { name: 'turn-1"x' } });
    expect(JSON.parse(TELNYX_CLEAR)).toEqual({ event: 'clear' });
  });

  it('orders a media frame by its chunk, else its sequence number', () => {
    expect(mediaOrder(MEDIA as TelnyxMedia)).toBe(2);
    const { chunk: _c, ...media } = MEDIA.media;
    expect(mediaOrder({ ...MEDIA, media } as TelnyxMedia)).toBe(4);
    expect(mediaOrder({ event: 'media', media: { payload: '' } })).toBeUndefined();
  });
});

describe('media frames put back in order', () => {
  const reorder = (maxHeld?: number) => {
    const out: number[] = [];
    return { out, r: new MediaReorder<number>((n) => out.push(n), maxHeld) };
  };

  it('frames swapped in pairs come out in order, each once', () => {
    const { out, r } = reorder();
    for (const n of [1, 3, 2, 5, 4, 7, 6, 8]) r.push(n, n);
    expect(out).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
  });

  it('a frame that never comes is given up once maxHeld frames wait behind it, and is dropped if it comes later', () => {
    const { out, r } = reorder(3);
    for (const n of [1, 3, 4, 5]) r.push(n, n);
    expect(out).toEqual([1]);
    r.push(6, 6);
    expect(out).toEqual([1, 3, 4, 5, 6]);
    r.push(2, 2);
    expect(out).toEqual([1, 3, 4, 5, 6]);
    expect(r.late).toBe(1);
  });

  it('a frame sent twice goes out once; a frame without an order goes out as it comes', () => {
    const { out, r } = reorder();
    r.push(1, 1);
    r.push(1, 1);
    r.push(undefined, 99);
    r.push(2, 2);
    expect(out).toEqual([1, 99, 2]);
    expect(r.late).toBe(1);
  });
});
