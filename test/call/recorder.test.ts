import { existsSync, mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CallRecorder, openRecording, repairRecording } from '../../src/call/recorder.ts';
import { decodeWav } from '../../src/audio/wav.ts';
import { amplitudeAt, db, tone } from '../audio/signals.ts';

const served = async (path: string) => {
  const { bytes, stream } = await openRecording(path);
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  const wav = Buffer.concat(chunks);
  expect(wav.length).toBe(bytes);
  return wav;
};

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
    expect([sample(0, 0), sample(319, 0), sample(320, 0), sample(640, 0), sample(959, 0)]).toEqual([
      1000, 1000, 0, 2000, 2000,
    ]);
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

  it('records a phone line at its own 8 kHz, written block by block as the call goes, and serves it at 16 kHz', async () => {
    const path = join(mkdtempSync(join(tmpdir(), 'rec-')), 'call.wav');
    const recorder = new CallRecorder(path, 8000);
    const caller = tone(1000, 8000, 3); // several blocks
    for (let at = 0; at < caller.length; at += 160) {
      recorder.callerAudio(caller.subarray(at, at + 160), at / 8);
      if (at === 640) recorder.agentAudio(new Int16Array(160).fill(-3000), 100); // sent 20 ms ahead of playing
    }
    expect(await recorder.close()).toBe(24000);
    const stored = readFileSync(path);
    expect(stored.readUInt32LE(24)).toBe(8000);
    expect(stored.readInt16LE(44 + 800 * 4 + 2)).toBe(-3000); // agent right, at 100 ms
    expect(existsSync(`${path}.caller.raw`)).toBe(false);

    const wav = await served(path);
    expect(wav.readUInt16LE(22)).toBe(2);
    expect(wav.readUInt32LE(24)).toBe(16000);
    expect(wav.readUInt32LE(40)).toBe(48000 * 4);
    const left = new Int16Array(48000);
    for (let i = 0; i < left.length; i++) left[i] = wav.readInt16LE(44 + i * 4);
    expect(Math.abs(db(amplitudeAt(left.subarray(1600, -1600), 1000, 16000) / 10000))).toBeLessThan(1);
    // The agent's 20 ms at 100 ms lands at 100 ms of the served file too.
    expect(wav.readInt16LE(44 + 1700 * 4 + 2)).toBeLessThan(-2500);
    expect(Math.abs(wav.readInt16LE(44 + 1400 * 4 + 2))).toBeLessThan(100);
  });

  it('takes a channel that stays behind the other for longer than its skew as silent, and still keeps both in step', () => {
    const path = join(mkdtempSync(join(tmpdir(), 'rec-')), 'call.wav');
    const recorder = new CallRecorder(path, 8000);
    // The agent speaks 5 s while no caller frame arrives; then the caller's frames come again.
    for (let ms = 0; ms < 5000; ms += 20) recorder.agentAudio(new Int16Array(160).fill(-1000), ms);
    recorder.callerAudio(new Int16Array(160).fill(500), 1000); // older than the skew: dropped
    recorder.callerAudio(new Int16Array(160).fill(700), 4000);
    expect(recorder.finish()).toBe(40000);
    const wav = readFileSync(path);
    const sample = (frame: number, channel: number) => wav.readInt16LE(44 + frame * 4 + channel * 2);
    expect([sample(8000, 0), sample(32000, 0), sample(32159, 0), sample(32160, 0)]).toEqual([0, 700, 700, 0]);
    expect([sample(0, 1), sample(20000, 1), sample(39999, 1)]).toEqual([-1000, -1000, -1000]);
  });

  it('serves a 16 kHz recording as it is', async () => {
    const path = join(mkdtempSync(join(tmpdir(), 'rec-')), 'call.wav');
    const recorder = new CallRecorder(path);
    recorder.callerAudio(new Int16Array(320).fill(1000), 0);
    recorder.finish();
    expect((await served(path)).equals(readFileSync(path))).toBe(true);
  });

  it('answers ENOENT for a recording that is not there', async () => {
    await expect(openRecording(join(tmpdir(), 'no-such-recording.wav'))).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('leaves a recording the process died writing readable: a header from the first block, its sizes put right after the crash', () => {
    const path = join(mkdtempSync(join(tmpdir(), 'rec-')), 'call.wav');
    const recorder = new CallRecorder(path, 8000);
    // 2.5 s of both sides at 8 kHz: two one-second blocks reach the file, the rest dies with the process.
    for (let ms = 0; ms < 2500; ms += 20) {
      recorder.callerAudio(new Int16Array(160).fill(1000), ms);
      recorder.agentAudio(new Int16Array(160).fill(-1000), ms);
    }
    const beforeRepair = readFileSync(path);
    expect(beforeRepair.toString('ascii', 0, 4)).toBe('RIFF');
    expect(beforeRepair.readUInt32LE(24)).toBe(8000);
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(repairRecording(path)).toBe(true);
    const wav = decodeWav(readFileSync(path), 8000);
    expect(wav.samples.length).toBe(2 * 8000);
  });

  it('removes a file that is no recording of ours when asked to repair it', () => {
    const path = join(mkdtempSync(join(tmpdir(), 'rec-')), 'call.wav');
    writeFileSync(path, 'not a wav at all');
    expect(repairRecording(path)).toBe(false);
    expect(existsSync(path)).toBe(false);
    expect(repairRecording(path)).toBe(false);
  });
});
