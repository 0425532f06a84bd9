import { describe, expect, it } from 'vitest';
import { OutboundPacer, PACER_DEFAULTS, PacerWakeups } from '../../../src/call/agent/pacer.ts';
import { ManualTimers } from '../../../src/timers.ts';
import type { CallTransport } from '../../../src/call/transport.ts';

/** Notes when each frame and mark left, on the manual clock. */
class SendLog implements CallTransport {
  readonly kind = 'twilio' as const;
  readonly sampleRate = 8000 as const;
  readonly frames: number[] = [];
  readonly marks: string[] = [];
  clears = 0;
  constructor(private readonly timers: ManualTimers) {}
  attach(): void {}
  sendAudio(): void {
    this.frames.push(this.timers.now());
  }
  sendMark(name: string): void {
    this.marks.push(name);
  }
  clear(): void {
    this.clears++;
  }
  notify(): void {}
  close(): void {}
}

const frame = () => new Int16Array(160);
const LEAD_FRAMES = PACER_DEFAULTS.leadMs / 20;

function setUp(calls = 1) {
  const timers = new ManualTimers(1000);
  const wakeups = new PacerWakeups(timers);
  const lines = Array.from({ length: calls }, () => {
    const log = new SendLog(timers);
    const pacer = new OutboundPacer(log, timers, { sent: () => undefined, drained: () => undefined }, { wakeups });
    return { log, pacer };
  });
  return { timers, wakeups, lines };
}

describe('OutboundPacer', () => {
  it('sends the lead at once, then a frame each time the lead has shrunk by one', () => {
    const { timers, lines } = setUp();
    const { log, pacer } = lines[0]!;
    for (let i = 0; i < LEAD_FRAMES + 3; i++) pacer.enqueue(frame());
    expect(log.frames).toEqual(Array(LEAD_FRAMES).fill(1000));
    timers.advance(100);
    expect(log.frames.slice(LEAD_FRAMES)).toEqual([1001, 1021, 1041]);
    expect(pacer.idle).toBe(true);
  });
});

describe('PacerWakeups', () => {
  it('sends a frame that fell due while the event loop was busy when the inbound path runs the overdue wake-ups', () => {
    const { timers, wakeups, lines } = setUp(3);
    for (const { pacer } of lines) for (let i = 0; i < LEAD_FRAMES + 4; i++) pacer.enqueue(frame());
    expect(wakeups.size).toBe(3);
    timers.stall(25); // a batch of inbound frames, longer than a frame: no timer could run
    wakeups.runOverdue();
    // The lead is topped up at once (two frames), before the batch goes on.
    for (const { log } of lines) expect(log.frames.slice(LEAD_FRAMES)).toEqual([1025, 1025]);
    // The next frame keeps its own schedule, and the timers that were due send nothing twice.
    timers.advance(20);
    for (const { log } of lines) expect(log.frames.slice(LEAD_FRAMES)).toEqual([1025, 1025, 1041]);
  });

  it('leaves every pacer alone before its wake-up is due', () => {
    const { timers, wakeups, lines } = setUp();
    const { log, pacer } = lines[0]!;
    for (let i = 0; i < LEAD_FRAMES + 1; i++) pacer.enqueue(frame());
    wakeups.runOverdue(); // due 1 ms on
    expect(wakeups.size).toBe(1);
    expect(log.frames).toHaveLength(LEAD_FRAMES);
    timers.stall(1);
    wakeups.runOverdue();
    expect(log.frames).toHaveLength(LEAD_FRAMES + 1);
    expect(wakeups.size).toBe(0);
  });

  it('wakes a pacer again after it re-armed during runOverdue', () => {
    const { timers, wakeups, lines } = setUp();
    const { log, pacer } = lines[0]!;
    for (let i = 0; i < LEAD_FRAMES + 3; i++) pacer.enqueue(frame());
    for (const at of [1001, 1021, 1041]) {
      timers.stall(at - timers.now());
      wakeups.runOverdue();
    }
    expect(log.frames.slice(LEAD_FRAMES)).toEqual([1001, 1021, 1041]);
  });

  it('never wakes a pacer that was cleared or stopped', () => {
    const { timers, wakeups, lines } = setUp(2);
    for (const { pacer } of lines) for (let i = 0; i < LEAD_FRAMES + 2; i++) pacer.enqueue(frame());
    lines[0]!.pacer.clear();
    lines[1]!.pacer.stop();
    expect(wakeups.size).toBe(0);
    timers.stall(100);
    wakeups.runOverdue();
    timers.advance(100);
    for (const { log } of lines) expect(log.frames).toHaveLength(LEAD_FRAMES);
    expect(lines[0]!.log.clears).toBe(1);
  });
});
