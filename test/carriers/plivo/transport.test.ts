// Plivo's stream messages (src/carriers/plivo/media-protocol.ts) and the Plivo transport against a
// socket that records what it is sent: L16 16 kHz caller audio, keypad digits and playedStream in;
// agent audio as playAudio in the line's format, checkpoints and barge-in's clearAudio out, with
// the checkpoints a clear dropped answered once Plivo confirms the clear.
import { EventEmitter } from 'node:events';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import type WebSocket from 'ws';
import type { LineFormat } from '../../../src/audio/line-format.ts';
import type { TransportHandlers } from '../../../src/call/transport.ts';
import { lineFormatOf, parsePlivoMessage, PlivoStart } from '../../../src/carriers/plivo/media-protocol.ts';
import { PlivoTransport } from '../../../src/carriers/plivo/transport.ts';

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
const WIDEBAND: LineFormat = { codec: 'l16le', rate: 16000 };

function line(format: LineFormat = WIDEBAND) {
  const socket = new FakeSocket();
  const transport = new PlivoTransport(socket as unknown as WebSocket, 'stream-1', 'call-uuid', log, format, {
    now: () => 0,
  });
  const heard = { frames: [] as Int16Array[], marks: [] as string[], digits: [] as string[], hangups: 0 };
  const handlers: TransportHandlers = {
    audio: (frame) => heard.frames.push(frame.slice()),
    mark: (name) => heard.marks.push(name),
    dtmf: (digit) => heard.digits.push(digit),
    hangup: () => heard.hangups++,
  };
  transport.attach(handlers);
  return { socket, transport, heard };
}

/** Little-endian L16 bytes of `samples`. */
function l16(samples: number[]): Buffer {
  const bytes = Buffer.alloc(samples.length * 2);
  samples.forEach((s, i) => bytes.writeInt16LE(s, i * 2));
  return bytes;
}

const media = (payload: Buffer, chunk: number, track = 'inbound') =>
  JSON.stringify({
    event: 'media',
    sequenceNumber: chunk + 1,
    streamId: 'stream-1',
    media: { track, timestamp: String(1_705_312_200_000 + chunk * 20), chunk, payload: payload.toString('base64') },
    extra_headers: '',
  });

const start = (mediaFormat?: Record<string, unknown>) =>
  PlivoStart.parse({
    event: 'start',
    sequenceNumber: 1,
    start: {
      callId: 'c',
      streamId: 's',
      accountId: 'MA1',
      tracks: ['inbound'],
      ...(mediaFormat ? { mediaFormat } : {}),
    },
    extra_headers: '',
  });

describe('Plivo stream messages', () => {
  it('a start announces the line format: L16 at 16 or 8 kHz, μ-law at 8 kHz; others are refused', () => {
    expect(lineFormatOf(start({ encoding: 'audio/x-l16', sampleRate: 16000 }))).toEqual({
      codec: 'l16le',
      rate: 16000,
    });
    expect(lineFormatOf(start({ encoding: 'audio/x-l16', sampleRate: 8000 }))).toEqual({ codec: 'l16le', rate: 8000 });
    expect(lineFormatOf(start({ encoding: 'audio/x-mulaw', sampleRate: 8000 }))).toEqual({
      codec: 'mulaw',
      rate: 8000,
    });
    expect(lineFormatOf(start({ encoding: 'audio/x-mulaw', sampleRate: 16000 }))).toBeUndefined();
    expect(lineFormatOf(start({ encoding: 'audio/opus', sampleRate: 48000 }))).toBeUndefined();
    expect(lineFormatOf(start())).toEqual(WIDEBAND);
  });

  it('takes Plivo’s documented messages and refuses what is not one', () => {
    for (const text of [
      media(l16([1, 2]), 1),
      '{"event":"dtmf","sequenceNumber":7,"streamId":"s","dtmf":{"track":"inbound","digit":"5"}}',
      '{"event":"playedStream","sequenceNumber":9,"streamId":"s","name":"m1"}',
      '{"event":"clearedAudio","sequenceNumber":0,"streamId":"s"}',
    ])
      expect(parsePlivoMessage(text).ok, text).toBe(true);
    for (const text of [
      'not json',
      '{"event":"media","media":{"payload":"***"}}',
      '{"event":"dtmf","dtmf":{"digit":"12"}}',
      '{"event":"start","start":{"streamId":"s"}}',
      '{"event":"mark","mark":{"name":"m"}}',
    ])
      expect(parsePlivoMessage(text).ok, text).toBe(false);
  });
});

describe('Plivo media transport', () => {
  it('caller L16 16 kHz audio reaches the session as 20 ms frames of 320 samples, little-endian, split anywhere', () => {
    const { transport, heard, socket } = line();
    const samples = Array.from({ length: 640 }, (_, i) => (i % 2 === 0 ? 1000 + i : -1000 - i));
    const bytes = l16(samples);
    // Split mid-sample: the odd byte carries into the next payload.
    transport.receive(media(bytes.subarray(0, 401), 1));
    transport.receive(media(bytes.subarray(401), 2));
    transport.receive(media(l16(new Array<number>(320).fill(7)), 3, 'outbound'));
    expect(heard.frames.map((f) => f.length)).toEqual([320, 320]);
    expect([...heard.frames[0]!, ...heard.frames[1]!]).toEqual(samples);
    expect(transport.sampleRate).toBe(16000);
    expect(transport.lineEncoding).toBe('linear16');
    expect(transport.carrierCallId).toBe('call-uuid');
    expect(socket.sent).toEqual([]);
  });

  it('agent frames go out as playAudio in the line’s format: L16 16 kHz little-endian, or μ-law 8 kHz', () => {
    const wide = line();
    wide.transport.sendAudio(Int16Array.from({ length: 320 }, (_, i) => i - 160));
    const sent = JSON.parse(wide.socket.sent[0]!) as { event: string; media: Record<string, unknown> };
    expect(sent).toMatchObject({ event: 'playAudio', media: { contentType: 'audio/x-l16', sampleRate: 16000 } });
    expect(Buffer.from(String(sent.media.payload), 'base64')).toEqual(
      l16(Array.from({ length: 320 }, (_, i) => i - 160)),
    );
    const narrow = line({ codec: 'mulaw', rate: 8000 });
    narrow.transport.sendAudio(new Int16Array(160));
    const mulaw = JSON.parse(narrow.socket.sent[0]!) as { media: Record<string, unknown> };
    expect(mulaw.media).toMatchObject({ contentType: 'audio/x-mulaw', sampleRate: 8000 });
    expect(Buffer.from(String(mulaw.media.payload), 'base64')).toHaveLength(160);
  });

  it('marks go out as checkpoints and come back on playedStream; keypad digits reach the session', () => {
    const { transport, socket, heard } = line();
    transport.sendMark('utterance-1');
    expect(JSON.parse(socket.sent[0]!)).toEqual({ event: 'checkpoint', streamId: 'stream-1', name: 'utterance-1' });
    transport.receive('{"event":"playedStream","sequenceNumber":4,"streamId":"stream-1","name":"utterance-1"}');
    transport.receive(
      '{"event":"dtmf","sequenceNumber":5,"streamId":"stream-1","dtmf":{"track":"inbound","digit":"#"}}',
    );
    expect(heard.marks).toEqual(['utterance-1']);
    expect(heard.digits).toEqual(['#']);
  });

  it('barge-in sends clearAudio; the checkpoints it dropped are answered when Plivo confirms with clearedAudio', () => {
    const { transport, socket, heard } = line();
    transport.sendMark('a');
    transport.sendMark('b');
    transport.receive('{"event":"playedStream","streamId":"stream-1","name":"a"}');
    transport.clear();
    expect(JSON.parse(socket.sent.at(-1)!)).toEqual({ event: 'clearAudio', streamId: 'stream-1' });
    transport.sendMark('c');
    expect(heard.marks).toEqual(['a']);
    transport.receive('{"event":"clearedAudio","sequenceNumber":8,"streamId":"stream-1"}');
    expect(heard.marks).toEqual(['a', 'b']);
    transport.receive('{"event":"playedStream","streamId":"stream-1","name":"c"}');
    // A second answer for a checkpoint already given back is not passed on.
    transport.receive('{"event":"playedStream","streamId":"stream-1","name":"b"}');
    expect(heard.marks).toEqual(['a', 'b', 'c']);
  });

  it('the socket closing is the far end hanging up, told once; malformed messages are counted and dropped', () => {
    const { transport, socket, heard } = line();
    transport.receive('{"event":"media","media":{}}');
    expect(transport.dropped).toBe(1);
    socket.close();
    transport.receive('{"event":"stop"}');
    expect(heard.hangups).toBe(1);
  });
});
