import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CallRecorder } from '../../src/call/recorder.ts';

describe('call recording', () => {
  it('writes caller left and agent right on the call clock, with silence where nobody spoke, and removes its spools', () => {
    const path = join(mkdtempSync(join(tmpdir(), 'rec-')), 'call.wav');
    const recorder = new CallRecorder(path);
    recorder.callerAudio(new Int16Array(320).fill(1000), 0); // 0–20 ms
    recorder.callerAudio(new Int16Array(320).fill(2000), 40); // 40–60 ms, a gap before it
    recorder.agentAudio(new Int16Array(320).fill(-3000), 100); // 100–120 ms
    recorder.agentAudio(new Int16Array(320).fill(-4000), 120); // cleared before it played:
    recorder.agentCleared(120);
    const frames = recorder.finish();
    const wav = readFileSync(path);
    expect(wav.subarray(0, 4).toString()).toBe('RIFF');
    expect(wav.readUInt16LE(22)).toBe(2);
    expect(wav.readUInt32LE(24)).toBe(16000);
    expect(frames).toBe(1920); // 120 ms
    const sample = (frame: number, channel: number) => wav.readInt16LE(44 + frame * 4 + channel * 2);
    expect([sample(0, 0), sample(319, 0), sample(320, 0), sample(640, 0), sample(959, 0)]).toEqual([1000, 1000, 0, 2000, 2000]);
    expect([sample(0, 1), sample(1599, 1), sample(1600, 1), sample(1919, 1)]).toEqual([0, 0, -3000, -3000]);
    expect(existsSync(`${path}.caller.raw`) || existsSync(`${path}.agent.raw`)).toBe(false);
  });

  it('leaves nothing behind when discarded', () => {
    const path = join(mkdtempSync(join(tmpdir(), 'rec-')), 'call.wav');
    const recorder = new CallRecorder(path);
    recorder.callerAudio(new Int16Array(320), 0);
    recorder.discard();
    expect(existsSync(path) || existsSync(`${path}.caller.raw`)).toBe(false);
  });
});
