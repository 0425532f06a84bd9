// The Telnyx transport against a socket that records what it is sent: caller audio in chunk order,
// keypad digits, marks and the far end's stop in; agent audio, marks and barge-in's clear out.
import { EventEmitter } from 'node:events';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import type WebSocket from 'ws';
import { muLawDecodeSample } from '../../../src/audio/g711.ts';
import type { TransportHandlers } from '../../../src/call/transport.ts';
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

function line() {
  const socket = new FakeSocket();
  const transport = new TelnyxTransport(socket as unknown as WebSocket, 'stream-1', 'v3:call', log, { now: () => 0 });
  const heard = { frames: [] as number[], marks: [] as string[], digits: [] as string[], hangups: 0 };
  const handlers: TransportHandlers = {
    audio: (frame) => heard.frames.push(frame[0]!),
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
});
