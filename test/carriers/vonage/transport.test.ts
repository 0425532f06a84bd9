// The Vonage transport against a socket that records what it is sent: binary L16 frames in (any
// split, held to the clock), keypad digits and notifies in; agent audio out as 640-byte binary
// frames, each its own copy, marks as notify actions, barge-in as clear with every pending mark
// reported played once.
import { EventEmitter } from 'node:events';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import type WebSocket from 'ws';
import { INBOUND_PACE_DEFAULTS } from '../../../src/carriers/inbound-pace.ts';
import type { TransportHandlers } from '../../../src/call/transport.ts';
import { VonageTransport } from '../../../src/carriers/vonage/transport.ts';

class FakeSocket extends EventEmitter {
  readyState = 1;
  readonly sent: { data: string | Buffer; binary: boolean }[] = [];
  closedWith: number | undefined;
  send(data: string | Buffer, options?: { binary?: boolean }): void {
    this.sent.push({ data, binary: options?.binary === true });
  }
  close(code = 1000): void {
    this.closedWith = code;
    this.readyState = 3;
    this.emit('close');
  }
}

const log = pino({ level: 'silent' });

function line(now = () => 0) {
  const socket = new FakeSocket();
  const transport = new VonageTransport(socket as unknown as WebSocket, 'uuid-1', log, { now });
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

/** 20 ms of 16 kHz L16, little-endian, every sample `value`. */
const frame = (value: number) => {
  const bytes = Buffer.alloc(640);
  for (let i = 0; i < 320; i++) bytes.writeInt16LE(value, i * 2);
  return bytes;
};

describe('Vonage media transport', () => {
  it('runs at 16 kHz, linear16, and names the call by its uuid', () => {
    const { transport } = line();
    expect(transport.sampleRate).toBe(16000);
    expect(transport.lineEncoding).toBe('linear16');
    expect(transport.carrierCallId).toBe('uuid-1');
    expect(transport.kind).toBe('vonage');
  });

  it('binary L16 frames, split anywhere, reach the session as 20 ms frames of their samples', () => {
    const { transport, heard } = line();
    const bytes = Buffer.concat([frame(1000), frame(-2000)]);
    transport.receiveAudio(bytes.subarray(0, 333));
    transport.receiveAudio(bytes.subarray(333, 1001));
    transport.receiveAudio(bytes.subarray(1001));
    expect(heard.frames.map((f) => [f.length, f[0], f[319]])).toEqual([
      [320, 1000, 1000],
      [320, -2000, -2000],
    ]);
  });

  it('caller audio far ahead of the clock is dropped, then the stream is closed 1008', () => {
    const { socket, transport, heard } = line(() => 0);
    const frames = (INBOUND_PACE_DEFAULTS.aheadMs + INBOUND_PACE_DEFAULTS.closeAfterDroppedMs) / 20 + 5;
    for (let i = 0; i < frames; i++) transport.receiveAudio(frame(1));
    expect(heard.frames.length).toBe(INBOUND_PACE_DEFAULTS.aheadMs / 20);
    expect(socket.closedWith).toBe(1008);
  });

  it('agent frames go out as binary 640-byte frames, each its own buffer', () => {
    const { socket, transport } = line();
    transport.sendAudio(new Int16Array(320).fill(300));
    transport.sendAudio(new Int16Array(320).fill(-5));
    expect(socket.sent.map((s) => s.binary)).toEqual([true, true]);
    const [a, b] = socket.sent.map((s) => s.data as Buffer);
    expect([a!.length, a!.readInt16LE(0), b!.readInt16LE(638)]).toEqual([640, 300, -5]);
  });

  it('keypad digits come from websocket:dtmf', () => {
    const { transport, heard } = line();
    transport.receive('{"event":"websocket:dtmf","digit":"7","duration":260}');
    expect(heard.digits).toEqual(['7']);
  });

  it('a mark is a notify action, played when its websocket:notify comes (and the marks before it with it)', () => {
    const { socket, transport, heard } = line();
    transport.sendMark('u1');
    transport.sendMark('u2');
    expect(socket.sent.map((s) => JSON.parse(s.data as string))).toEqual([
      { action: 'notify', payload: { mark: 'u1' } },
      { action: 'notify', payload: { mark: 'u2' } },
    ]);
    transport.receive('{"event":"websocket:notify","payload":{"mark":"u2"}}');
    transport.receive('{"event":"websocket:notify","payload":{"mark":"u1"}}');
    expect(heard.marks).toEqual(['u1', 'u2']);
  });

  it('barge-in sends clear and reports each pending mark played once, even if its notify comes later', async () => {
    const { socket, transport, heard } = line();
    transport.sendMark('u1');
    transport.clear();
    expect(JSON.parse(socket.sent.at(-1)!.data as string)).toEqual({ action: 'clear' });
    await Promise.resolve();
    transport.receive('{"event":"websocket:cleared"}');
    transport.receive('{"event":"websocket:notify","payload":{"mark":"u1"}}');
    expect(heard.marks).toEqual(['u1']);
  });

  it('the socket closing is the far end hanging up, once; a malformed message is dropped and counted', () => {
    const { socket, transport, heard } = line();
    transport.receive('{"event":');
    expect(transport.dropped).toBe(1);
    socket.close();
    transport.close('agent_hangup');
    expect(heard.hangups).toBe(1);
  });
});
