import { createSocket, type Socket } from 'node:dgram';
import { once } from 'node:events';
import { afterEach, describe, expect, it } from 'vitest';
import type { TransportHandlers } from '../../../src/call/transport.ts';
import { parseRtp, type RtpPacket } from '../../../src/carriers/sip/rtp-packet.ts';
import { RtpPortPool } from '../../../src/carriers/sip/rtp-ports.ts';
import { G722, PCMA, PCMU, RtpSender } from '../../../src/carriers/sip/rtp-sender.ts';
import type { NegotiatedMedia } from '../../../src/carriers/sip/sdp.ts';
import { parseTelephoneEvent } from '../../../src/carriers/sip/telephone-event.ts';
import { SipTransport } from '../../../src/carriers/sip/transport.ts';
import { ManualTimers } from '../../../src/timers.ts';

const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

async function until(done: () => boolean): Promise<void> {
  for (let i = 0; i < 400 && !done(); i++) await new Promise((r) => setTimeout(r, 5));
}

const pool = new RtpPortPool({ low: 47400, high: 47419 }, '127.0.0.1');

/** A phone on loopback: its socket, what it received, and a sender of its own. */
async function phone() {
  const socket: Socket = createSocket('udp4');
  socket.bind(0, '127.0.0.1');
  await once(socket, 'listening');
  cleanups.push(() => socket.close());
  const received: RtpPacket[] = [];
  socket.on('message', (datagram: Buffer) => {
    const packet = parseRtp(Buffer.from(datagram));
    if (packet) received.push(packet);
  });
  return { socket, received, port: socket.address().port };
}

async function setUp(media: Partial<NegotiatedMedia> = {}) {
  const far = await phone();
  const port = await pool.bind();
  const timers = new ManualTimers(1000);
  const log = {
    frames: [] as Int16Array[],
    digits: [] as string[],
    marks: [] as string[],
    hangups: 0,
    messages: [] as string[],
  };
  const events = { closed: [] as string[], timeouts: 0, dropped: 0 };
  const negotiated: NegotiatedMedia = {
    codec: PCMU,
    payloadType: 0,
    telephoneEventType: 101,
    remote: { address: '127.0.0.1', port: far.port },
    direction: 'sendrecv',
    onHold: false,
    ...media,
  };
  const transport = new SipTransport({
    port,
    media: negotiated,
    timers,
    random: (bytes) => 'ab'.repeat(bytes),
    carrierCallId: 'call-1@192.0.2.10',
    onClose: (reason) => events.closed.push(reason),
    onMediaTimeout: () => events.timeouts++,
    onFrameDropped: () => events.dropped++,
    mediaTimeoutMs: 1000,
  });
  cleanups.push(() => transport.close('agent_hangup'));
  const handlers: TransportHandlers = {
    audio: (frame) => log.frames.push(Int16Array.from(frame)),
    mark: (name) => log.marks.push(name),
    dtmf: (digit) => log.digits.push(digit),
    hangup: (message) => {
      log.hangups++;
      if (message !== undefined) log.messages.push(message);
    },
  };
  transport.attach(handlers);
  const farSender = new RtpSender({
    codec: negotiated.codec,
    payloadType: negotiated.payloadType,
    telephoneEventType: 101,
    ssrc: 99,
    sequence: 1,
    timestamp: 0,
    now: () => timers.now(),
  });
  const toAgent = (packet: Buffer) => far.socket.send(packet, port.port, '127.0.0.1');
  return { far, port, timers, log, events, transport, farSender, toAgent };
}

const frame = (value = 1000) => new Int16Array(160).fill(value);

describe('SIP media transport', () => {
  it('hands the session 8 kHz 20 ms frames of the caller’s audio, and each key press once', async () => {
    const { log, farSender, toAgent, transport } = await setUp();
    expect(transport.sampleRate).toBe(8000);
    expect(transport.lineEncoding).toBe('mulaw');
    for (let i = 0; i < 3; i++) toAgent(farSender.audio(frame(2000))!);
    const press = farSender.telephoneEvent('5', 100)!;
    for (let p = press.next(); p; p = press.next()) toAgent(p);
    await until(() => log.digits.length === 1 && log.frames.length === 3);
    expect(log.frames.map((f) => f.length)).toEqual([160, 160, 160]);
    expect(log.frames[0]![0]).toBe(PCMU.decode(PCMU.encode(frame(2000)))[0]);
    expect(log.digits).toEqual(['5']);
  });

  it('decodes A-law and tells the recogniser the line is linear, not μ-law', async () => {
    const { log, farSender, toAgent, transport } = await setUp({ codec: PCMA, payloadType: 8 });
    expect(transport.lineEncoding).toBe('linear16');
    toAgent(farSender.audio(frame(3000))!);
    await until(() => log.frames.length === 1);
    expect(log.frames[0]![0]).toBe(PCMA.decode(PCMA.encode(frame(3000)))[0]);
  });

  it('runs a G.722 call at 16 kHz: 320-sample frames from the caller’s packets, and each agent frame one 160-byte packet of type 9', async () => {
    const { log, far, farSender, toAgent, transport, timers } = await setUp({ codec: G722, payloadType: 9 });
    expect(transport.sampleRate).toBe(16000);
    expect(transport.lineEncoding).toBe('linear16');
    const wide = Int16Array.from({ length: 320 }, (_, i) =>
      Math.round(6000 * Math.sin((2 * Math.PI * 5000 * i) / 16000)),
    );
    for (let i = 0; i < 5; i++) {
      toAgent(farSender.audio(wide)!);
      timers.advance(20);
    }
    await until(() => log.frames.length === 5);
    expect(log.frames.map((f) => f.length)).toEqual([320, 320, 320, 320, 320]);
    // A 5 kHz tone only a 16 kHz line carries comes through (G.722's delay settles by the last frame).
    expect(Math.max(...log.frames[4]!.map(Math.abs))).toBeGreaterThan(3000);
    transport.sendAudio(wide);
    transport.sendAudio(wide);
    await until(() => far.received.length === 2);
    expect(far.received.map((p) => [p.payloadType, p.payload.length])).toEqual([
      [9, 160],
      [9, 160],
    ]);
    expect(far.received[1]!.timestamp - far.received[0]!.timestamp).toBe(160);
  });

  it('sends each agent frame as one packet to the negotiated address, from its own port', async () => {
    const { far, transport, port } = await setUp();
    const from = once(far.socket, 'message');
    transport.sendAudio(frame());
    const [, info] = (await from) as [Buffer, { port: number }];
    expect(info.port).toBe(port.port);
    await until(() => far.received.length === 1);
    expect(far.received[0]).toMatchObject({ payloadType: 0, ssrc: 0xabababab, marker: true });
    expect(far.received[0]!.payload.length).toBe(160);
  });

  it('echoes a mark when the audio sent before it has played out, and at once on clear', async () => {
    const { log, timers, transport } = await setUp();
    for (let i = 0; i < 4; i++) transport.sendAudio(frame());
    transport.sendMark('end-1');
    timers.advance(79);
    expect(log.marks).toEqual([]);
    timers.advance(1);
    expect(log.marks).toEqual(['end-1']);
    for (let i = 0; i < 4; i++) transport.sendAudio(frame());
    transport.sendMark('end-2');
    transport.clear();
    expect(log.marks).toEqual(['end-1', 'end-2']);
    timers.advance(1000);
    expect(log.marks).toEqual(['end-1', 'end-2']);
  });

  it('sends keys as telephone events, 20 ms apart, with the agent’s audio dropped meanwhile', async () => {
    const { far, timers, transport, events } = await setUp();
    let done = false;
    void transport.sendDigits('1#').then(() => (done = true));
    transport.sendAudio(frame());
    for (let i = 0; i < 40 && !done; i++) {
      timers.advance(20);
      await Promise.resolve();
    }
    expect(done).toBe(true);
    expect(events.dropped).toBe(1);
    await until(() => far.received.length === 14);
    const keys = far.received.map((p) => parseTelephoneEvent(p.payload)!);
    expect(far.received.every((p) => p.payloadType === 101)).toBe(true);
    expect(keys.filter((k) => k.end).map((k) => k.event)).toEqual([1, 1, 1, 11, 11, 11]);
  });

  it('says no to keys when the far side takes no telephone events', async () => {
    const { transport } = await setUp({ telephoneEventType: undefined });
    expect(await transport.sendDigits('1')).toBe(false);
  });

  it('sends nothing while the far side holds the call, and no media timeout fires then', async () => {
    const { far, timers, transport, events, log } = await setUp({ direction: 'recvonly', onHold: true });
    transport.sendAudio(frame());
    timers.advance(5000);
    expect(events).toMatchObject({ dropped: 1, timeouts: 0 });
    expect(log.hangups).toBe(0);
    transport.update({
      codec: PCMU,
      payloadType: 0,
      telephoneEventType: 101,
      remote: { address: '127.0.0.1', port: far.port },
      direction: 'sendrecv',
      onHold: false,
    });
    transport.sendAudio(frame());
    await until(() => far.received.length === 1);
    expect(far.received).toHaveLength(1);
  });

  it('on media timeout tells the signalling and hangs the session up saying the media stopped, and sends no BYE on the close that follows', async () => {
    const { timers, transport, events, log } = await setUp();
    timers.advance(1000);
    expect(events.timeouts).toBe(1);
    expect(log.hangups).toBe(1);
    expect(log.messages).toEqual(['No RTP from the far side for 1 s: the media stopped.']);
    transport.close('user_hangup');
    expect(events.closed).toEqual([]);
  });

  it('asks the signalling to hang up once when the session closes, and gives its port back', async () => {
    const { transport, events, port } = await setUp();
    transport.close('agent_hangup');
    transport.close('agent_hangup');
    expect(events.closed).toEqual(['agent_hangup']);
    const again = createSocket('udp4');
    cleanups.push(() => again.close());
    await new Promise<void>((resolve, reject) => {
      again.once('error', reject);
      again.bind(port.port, '127.0.0.1', resolve);
    });
  });

  it('tells the session of a hangup that came before it attached', async () => {
    const late = new SipTransport({
      port: await pool.bind(),
      media: {
        codec: PCMU,
        payloadType: 0,
        telephoneEventType: undefined,
        remote: { address: '127.0.0.1', port: 9 },
        direction: 'sendrecv',
        onHold: false,
      },
      timers: new ManualTimers(),
      random: (bytes) => '00'.repeat(bytes),
      carrierCallId: 'c',
      onClose: () => {},
      onMediaTimeout: () => {},
    });
    cleanups.push(() => late.close('user_hangup'));
    late.hangup();
    let hungUp = false;
    late.attach({ audio: () => {}, mark: () => {}, dtmf: () => {}, hangup: () => (hungUp = true) });
    await Promise.resolve();
    expect(hungUp).toBe(true);
  });
});
