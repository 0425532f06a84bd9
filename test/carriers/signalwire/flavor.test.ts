// What SignalWire's flavor changes in Twilio's pieces, checked without a service: the cXML asks for
// L16@16000h on SignalWire's own media path (Twilio's TwiML unchanged), a start message's
// mediaFormat picks the line's format (L16 little-endian), each account's LaML API is its space's
// unless SIGNALWIRE_API_BASE says otherwise, and the transport speaks 16 kHz L16.
import { EventEmitter } from 'node:events';
import pino from 'pino';
import type WebSocket from 'ws';
import { describe, expect, it } from 'vitest';
import { lamlApiBase, spaceHost } from '../../../src/carriers/signalwire/accounts.ts';
import { SIGNALWIRE_FLAVOR, SIGNALWIRE_LINE } from '../../../src/carriers/signalwire/flavor.ts';
import { lineFormatOf } from '../../../src/carriers/twilio/media-route.ts';
import { TwilioTransport } from '../../../src/carriers/twilio/transport.ts';
import { connectStreamTwiml } from '../../../src/carriers/twilio/twiml.ts';

describe("SignalWire's cXML", () => {
  it('asks for a wideband L16@16000h stream to /media/signalwire; Twilio keeps its codec-less stream to /media/twilio', () => {
    expect(connectStreamTwiml('https://agents.example.com', 'call_1', 's3cret', SIGNALWIRE_FLAVOR)).toBe(
      '<?xml version="1.0" encoding="UTF-8"?><Response><Connect>' +
        '<Stream url="wss://agents.example.com/media/signalwire" codec="L16@16000h">' +
        '<Parameter name="call_id" value="call_1"/><Parameter name="secret" value="s3cret"/>' +
        '</Stream></Connect></Response>',
    );
    expect(connectStreamTwiml('https://agents.example.com', 'call_1', 's3cret')).toContain(
      '<Stream url="wss://agents.example.com/media/twilio">',
    );
  });
});

describe('the stream start message', () => {
  it("names the line's format: L16 is little-endian at its rate, μ-law and A-law at 8 kHz; none falls back to what was asked for", () => {
    const mono = (encoding: string, sampleRate: number) => ({ encoding, sampleRate, channels: 1 });
    expect(lineFormatOf(mono('audio/x-l16', 16000), SIGNALWIRE_LINE)).toEqual({ codec: 'l16le', rate: 16000 });
    expect(lineFormatOf(mono('audio/x-l16', 8000), SIGNALWIRE_LINE)).toEqual({ codec: 'l16le', rate: 8000 });
    expect(lineFormatOf(mono('audio/x-mulaw', 8000), SIGNALWIRE_LINE)).toEqual({ codec: 'mulaw', rate: 8000 });
    expect(lineFormatOf(mono('audio/x-alaw', 8000), SIGNALWIRE_LINE)).toEqual({ codec: 'alaw', rate: 8000 });
    expect(lineFormatOf(undefined, SIGNALWIRE_LINE)).toEqual(SIGNALWIRE_LINE);
    expect(lineFormatOf(mono('audio/x-l16', 24000), SIGNALWIRE_LINE)).toBeUndefined();
    expect(lineFormatOf({ encoding: 'audio/x-l16', sampleRate: 16000, channels: 2 }, SIGNALWIRE_LINE)).toBeUndefined();
    expect(lineFormatOf(mono('audio/opus', 16000), SIGNALWIRE_LINE)).toBeUndefined();
  });
});

describe("an account's LaML API", () => {
  it('is https://{space}/api/laml, however the space is written, or SIGNALWIRE_API_BASE/api/laml when set', () => {
    expect(spaceHost('https://Example.signalwire.com/')).toBe('example.signalwire.com');
    expect(lamlApiBase('example.signalwire.com', undefined)).toBe('https://example.signalwire.com/api/laml');
    expect(lamlApiBase('https://example.signalwire.com/', undefined)).toBe('https://example.signalwire.com/api/laml');
    expect(lamlApiBase('example.signalwire.com', 'http://127.0.0.1:4010')).toBe('http://127.0.0.1:4010/api/laml');
  });
});

class FakeSocket extends EventEmitter {
  readyState = 1;
  readonly sent: string[] = [];
  send(text: string): void {
    this.sent.push(text);
  }
  close(): void {
    this.readyState = 3;
  }
}

describe("SignalWire's transport", () => {
  it('decodes little-endian L16 at 16 kHz into 320-sample frames and sends 640-byte frames back', () => {
    const socket = new FakeSocket();
    let now = 0;
    const transport = new TwilioTransport(
      socket as unknown as WebSocket,
      'MZ1',
      'call-sid',
      pino({ level: 'silent' }),
      { now: () => now },
      { kind: 'signalwire', format: SIGNALWIRE_LINE },
    );
    expect(transport.kind).toBe('signalwire');
    expect(transport.sampleRate).toBe(16000);
    const heard: Int16Array[] = [];
    transport.attach({
      audio: (frame) => heard.push(frame.slice()),
      mark: () => undefined,
      dtmf: () => undefined,
      hangup: () => undefined,
    });
    const bytes = Buffer.alloc(640);
    for (let i = 0; i < 320; i++) bytes.writeInt16LE(i * 10 - 1000, i * 2);
    now = 20;
    transport.receive(JSON.stringify({ event: 'media', media: { payload: bytes.toString('base64') } }));
    expect(heard).toHaveLength(1);
    expect(heard[0]![0]).toBe(-1000);
    expect(heard[0]![319]).toBe(2190);
    transport.sendAudio(heard[0]!);
    const out = JSON.parse(socket.sent[0]!) as { event: string; media: { payload: string } };
    expect(out.event).toBe('media');
    expect(Buffer.from(out.media.payload, 'base64').equals(bytes)).toBe(true);
  });
});
