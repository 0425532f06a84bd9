// The NCCOs the service answers Vonage with, and the media protocol's words: a wideband websocket
// connect carrying the call_id and secret as headers, a cold transfer's synchronous phone connect,
// and Vonage's websocket events read (or refused) as they are documented.
import { describe, expect, it } from 'vitest';
import {
  lineFormatOf,
  parseVonageEvent,
  VONAGE_CLEAR,
  vonageNotify,
} from '../../../src/carriers/vonage/media-protocol.ts';
import { connectWebsocketNcco, NCCO_MARKUP, transferNcco } from '../../../src/carriers/vonage/ncco.ts';

describe('Vonage NCCOs', () => {
  it("connects the call to /media/vonage over wss, wideband L16 at 16 kHz, with call_id and secret as headers, its leg events to the call's event URL", () => {
    expect(connectWebsocketNcco('https://calls.example.com', 'call_1', 's3cret')).toEqual([
      {
        action: 'connect',
        eventUrl: ['https://calls.example.com/telephony/vonage/event?call_id=call_1'],
        endpoint: [
          {
            type: 'websocket',
            uri: 'wss://calls.example.com/media/vonage',
            'content-type': 'audio/l16;rate=16000',
            headers: { call_id: 'call_1', secret: 's3cret' },
          },
        ],
      },
    ]);
    expect(JSON.parse(NCCO_MARKUP.connectStream('http://127.0.0.1:3000', 'c', 's'))[0].endpoint[0].uri).toBe(
      'ws://127.0.0.1:3000/media/vonage',
    );
  });

  it('says a message and ends the call for a number nobody answers', () => {
    expect(JSON.parse(NCCO_MARKUP.sayAndHangUp('Goodbye.'))).toEqual([{ action: 'talk', text: 'Goodbye.' }]);
  });

  it('transfers with a synchronous connect to the phone, numbers without "+", events to the transfer URL', () => {
    expect(
      transferNcco({ to: '+14155559403', from: '+14155559400', timeoutS: 30, eventUrl: 'https://x/t?call_id=c' }),
    ).toEqual([
      {
        action: 'connect',
        from: '14155559400',
        timeout: 30,
        eventType: 'synchronous',
        eventUrl: ['https://x/t?call_id=c'],
        endpoint: [{ type: 'phone', number: '14155559403' }],
      },
    ]);
  });
});

describe('Vonage media protocol', () => {
  it('reads websocket:connected with its headers, dtmf, notify with its payload, and other events by name', () => {
    expect(
      parseVonageEvent(
        '{"event":"websocket:connected","content-type":"audio/l16;rate=16000","call_id":"c","secret":"s"}',
      ),
    ).toMatchObject({ ok: true, message: { event: 'websocket:connected', call_id: 'c', secret: 's' } });
    expect(parseVonageEvent('{"event":"websocket:dtmf","digit":"5","duration":260}')).toMatchObject({
      ok: true,
      message: { event: 'websocket:dtmf', digit: '5' },
    });
    expect(parseVonageEvent('{"event":"websocket:notify","payload":{"mark":"u1"}}')).toEqual({
      ok: true,
      message: { event: 'websocket:notify', mark: 'u1' },
    });
    expect(parseVonageEvent('{"event":"websocket:cleared"}')).toEqual({
      ok: true,
      message: { event: 'other', name: 'websocket:cleared' },
    });
  });

  it('reports malformed messages instead of throwing', () => {
    expect(parseVonageEvent('not json').ok).toBe(false);
    expect(parseVonageEvent('{"action":"clear"}').ok).toBe(false);
    expect(parseVonageEvent('{"event":"websocket:dtmf","digit":"55"}').ok).toBe(false);
    expect(parseVonageEvent('{"event":"websocket:connected"}').ok).toBe(false);
  });

  it('takes L16 at 8 or 16 kHz, nothing else', () => {
    expect(lineFormatOf('audio/l16;rate=16000')).toEqual({ codec: 'l16le', rate: 16000 });
    expect(lineFormatOf('audio/l16;rate=8000')).toEqual({ codec: 'l16le', rate: 8000 });
    expect(lineFormatOf('audio/l16;rate=24000')).toBeUndefined();
    expect(lineFormatOf('audio/x-mulaw')).toBeUndefined();
  });

  it('words clear and notify as Vonage documents them', () => {
    expect(JSON.parse(VONAGE_CLEAR)).toEqual({ action: 'clear' });
    expect(JSON.parse(vonageNotify('u1'))).toEqual({ action: 'notify', payload: { mark: 'u1' } });
  });
});
