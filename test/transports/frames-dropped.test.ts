// An agent frame that meets a closed socket is not sent, and is counted (voicecall_outbound_frames_dropped_total).
import { EventEmitter } from 'node:events';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import type WebSocket from 'ws';
import { TelnyxTransport } from '../../src/carriers/telnyx/transport.ts';
import { TwilioTransport } from '../../src/carriers/twilio/transport.ts';
import { WebTransport } from '../../src/transports/web/transport.ts';

class FakeSocket extends EventEmitter {
  readyState = 1;
  sent = 0;
  send(): void {
    this.sent++;
  }
  close(): void {
    this.readyState = 3;
  }
}

const log = pino({ level: 'silent' });

describe('outbound frames on a closed socket', () => {
  for (const [name, make] of [
    [
      'Twilio',
      (socket: WebSocket, onFrameDropped: () => void) =>
        new TwilioTransport(socket, 'MZ1', 'CA1', log, { onFrameDropped }),
    ],
    [
      'Telnyx',
      (socket: WebSocket, onFrameDropped: () => void) =>
        new TelnyxTransport(socket, 'stream-1', 'v3:1', log, { onFrameDropped }),
    ],
    ['web', (socket: WebSocket, onFrameDropped: () => void) => new WebTransport(socket, log, { onFrameDropped })],
  ] as const) {
    it(`${name}: a frame is sent while the socket is open, and counted as dropped, not sent, once it has closed`, () => {
      const socket = new FakeSocket();
      let dropped = 0;
      const transport = make(socket as unknown as WebSocket, () => dropped++);
      transport.sendAudio(new Int16Array(name === 'web' ? 320 : 160));
      expect([socket.sent, dropped]).toEqual([1, 0]);
      socket.close();
      transport.sendAudio(new Int16Array(name === 'web' ? 320 : 160));
      transport.sendAudio(new Int16Array(name === 'web' ? 320 : 160));
      expect([socket.sent, dropped]).toEqual([1, 2]);
    });
  }
});
