// The Telnyx transport against a socket that records what it is sent: caller audio in chunk order,
// keypad digits, marks and the far end's stop in; agent audio, marks and barge-in's clear out; and a
// stream whose start announces G.722 heard and answered at 16 kHz in G.722.
import { EventEmitter } from 'node:events';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import type WebSocket from 'ws';
import { muLawDecodeSample } from '../../../src/audio/g711.ts';
import { g722Decoder, g722Encoder } from '../../../src/audio/g722.ts';
import type { LineFormat } from '../../../src/audio/line-format.ts';
import type { TransportHandlers } from '../../../src/call/transport.ts';
import { parseTelnyxMessage, telnyxLineFormat } from '../../../src/carriers/telnyx/media-protocol.ts';
import { TelnyxTransport } from '../../../src/carriers/telnyx/transport.ts';

class FakeSocket extends EventEmitter {
  readyState = 1;
  readonly sent: string[] = [];
  send(text: string): void {
    this.sent.push(text);
  }
  close(): void {
    this.readyState = 3;
    this.emit('close');
  }
}

const log = pino({ level: 'silent' });

function line(format?: LineFormat) {
  const socket = new FakeSocket();
  const transport = new TelnyxTransport(
    socket as unknown as WebSocket,
    'stream-1',
    'v3:call',
    log,
    { now: () => 0 },
    format,
  );
  const heard = {
    frames: [] as number[],
    whole: [] as Int16Array[],
    marks: [] as string[],
    digits: [] as string[],
    hangups: 0,
  };
  const handlers: TransportHandlers = {
    audio: (frame) => {
      heard.frames.push(frame[0]!);
      heard.whole.push(frame.slice());
    },
    mark: (name) => heard.marks.push(name),
    dtmf: (digit) => heard.digits.push(digit),
    hangup: () => heard.hangups++,
  };
  transport.attach(handlers);
  return { socket, transport, heard };
}

/** A 20 ms media frame whose every byte is `code`, numbered `chunk`. */
const media = (chunk: number, code: number, track = 'inbound') =>
  JSON.stringify({
    event: 'media',
    sequence_number: String(chunk + 1),
    media: {
      track,
      chunk: String(chunk),
      timestamp: String(chunk * 20),
      payload: Buffer.alloc(160, code).toString('base64'),
    },
    stream_id: 'stream-1',
  });

describe('Telnyx media transport', () => {
  it('caller frames arriving in swapped pairs reach the session in chunk order', () => {
    const { transport, heard } = line();
    const codes = [0x10, 0x20, 0x30, 0x40, 0x50, 0x60];
    for (const chunk of [1, 3, 2, 5, 4, 6]) transport.receive(media(chunk, codes[chunk - 1]!));
    expect(heard.frames).toEqual(codes.map(muLawDecodeSample));
    expect(transport.carrierCallId).toBe('v3:call');
  });

  it("only the caller's track is heard: an outbound track frame is not the caller", () => {
    const { transport, heard } = line();
    transport.receive(media(1, 0x10, 'outbound'));
    expect(heard.frames).toEqual([]);
  });

  it('keypad digits, played-up-to marks and the stop reach the session; a malformed message is dropped and counted', () => {
    const { transport, heard } = line();
    transport.receive(
      JSON.stringify({ event: 'dtmf', stream_id: 'stream-1', sequence_number: '2', dtmf: { digit: '7' } }),
    );
    transport.receive(
      JSON.stringify({ event: 'mark', stream_id: 'stream-1', sequence_number: '3', mark: { name: 'utt-1' } }),
    );
    transport.receive('{"event":"media","media":{"payload":"%%%"}}');
    transport.receive(
      JSON.stringify({
        event: 'stop',
        sequence_number: '4',
        stop: { call_control_id: 'v3:call' },
        stream_id: 'stream-1',
      }),
    );
    expect(heard).toMatchObject({ digits: ['7'], marks: ['utt-1'], hangups: 1 });
    expect(transport.dropped).toBe(1);
  });

  it('agent audio goes out as base64 μ-law media, then a mark; barge-in sends clear', () => {
    const { socket, transport } = line();
    transport.sendAudio(new Int16Array(160));
    transport.sendMark('utt-1');
    transport.clear();
    const [audio, mark, clear] = socket.sent.map((text) => JSON.parse(text) as Record<string, unknown>);
    expect(audio).toEqual({ event: 'media', media: { payload: Buffer.alloc(160, 0xff).toString('base64') } });
    expect(mark).toEqual({ event: 'mark', mark: { name: 'utt-1' } });
    expect(clear).toEqual({ event: 'clear' });
  });

  it('the service ending the call closes the socket without telling the session the caller hung up', () => {
    const { socket, transport, heard } = line();
    transport.close('agent_hangup');
    expect(socket.readyState).toBe(3);
    expect(heard.hangups).toBe(0);
  });

  it('a start announcing G.722 gives the recogniser 16 kHz frames and the caller hears the agent in G.722', () => {
    const start = parseTelnyxMessage(
      JSON.stringify({
        event: 'start',
        sequence_number: '1',
        stream_id: 'stream-1',
        start: {
          call_control_id: 'v3:call',
          media_format: { encoding: 'G722', sample_rate: 16000, channels: 1 },
          custom_parameters: {},
        },
      }),
    );
    if (!start.ok || start.message.event !== 'start') throw new Error('the start did not parse');
    const format = telnyxLineFormat(start.message);
    expect(format).toEqual({ codec: 'g722', rate: 16000 });
    const { socket, transport, heard } = line(format);
    expect(transport.sampleRate).toBe(16000);

    // 100 ms of a 1 kHz tone at 16 kHz, in G.722 as the caller's leg sends it: five 20 ms frames of 160 bytes.
    const tone = Int16Array.from({ length: 1600 }, (_, i) =>
      Math.round(8000 * Math.sin((2 * Math.PI * 1000 * i) / 16000)),
    );
    const wire = g722Encoder().encode(tone);
    for (let chunk = 1; chunk <= 5; chunk++) {
      const payload = wire.subarray((chunk - 1) * 160, chunk * 160).toString('base64');
      transport.receive(JSON.stringify({ event: 'media', media: { track: 'inbound', chunk: String(chunk), payload } }));
    }
    expect(heard.whole.map((frame) => frame.length)).toEqual([320, 320, 320, 320, 320]);
    // What the recogniser hears is the decoded wideband tone itself (G.722 delays it a few samples, keeps its level).
    const heardTone = Int16Array.from(heard.whole.flatMap((frame) => [...frame]));
    const rms = (x: Int16Array) => Math.sqrt(x.reduce((sum, v) => sum + v * v, 0) / x.length);
    expect(rms(heardTone.subarray(320))).toBeGreaterThan(0.8 * rms(tone));
    expect(rms(heardTone.subarray(320))).toBeLessThan(1.2 * rms(tone));

    // The agent's 16 kHz frames go back as G.722: 160 bytes per 20 ms, the caller's decoder reads the tone back.
    for (let i = 0; i < 5; i++) transport.sendAudio(tone.subarray(i * 320, (i + 1) * 320));
    const sent = socket.sent.map((text) => {
      const message = JSON.parse(text) as { event: string; media: { payload: string } };
      expect(message.event).toBe('media');
      return Buffer.from(message.media.payload, 'base64');
    });
    expect(sent.map((bytes) => bytes.length)).toEqual([160, 160, 160, 160, 160]);
    expect(Buffer.concat(sent)).toEqual(wire);
    expect(rms(g722Decoder().decode(Buffer.concat(sent)).subarray(320))).toBeGreaterThan(0.8 * rms(tone));
  });

  it('the start names the line: PCMA and L16 are read at their rates, OPUS and AMR-WB are not taken as μ-law', () => {
    const format = (encoding: string, sample_rate: number) => {
      const parsed = parseTelnyxMessage(
        JSON.stringify({
          event: 'start',
          stream_id: 's',
          start: { call_control_id: 'v3:call', media_format: { encoding, sample_rate, channels: 1 } },
        }),
      );
      if (!parsed.ok || parsed.message.event !== 'start') throw new Error('the start did not parse');
      return telnyxLineFormat(parsed.message);
    };
    expect(format('PCMU', 8000)).toEqual({ codec: 'mulaw', rate: 8000 });
    expect(format('PCMA', 8000)).toEqual({ codec: 'alaw', rate: 8000 });
    expect(format('G722', 8000)).toEqual({ codec: 'g722', rate: 16000 });
    expect(format('L16', 16000)).toEqual({ codec: 'l16be', rate: 16000 });
    expect(format('OPUS', 48000)).toBeUndefined();
    expect(format('AMR-WB', 16000)).toBeUndefined();
  });
});
