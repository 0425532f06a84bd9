import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { readWavFile } from '../../src/audio/wav.ts';
import { asteriskPrompts, fixtures, musicOnHoldFiles } from './test-sets.ts';

describe('audio test sets', () => {
  it('finds the asterisk telephone prompts with their transcripts, 8 kHz each', async () => {
    const prompts = asteriskPrompts();
    expect(prompts.length).toBeGreaterThan(300);
    const pass = prompts.find((p) => p.id === 'agent-pass');
    expect(pass?.text).toBe('Please enter your password followed by the pound key.');
    expect(prompts.some((p) => p.text.startsWith('[') || p.text.startsWith('('))).toBe(false);
    expect((await readWavFile(pass!.file)).sampleRate).toBe(8000);
  });

  it('finds the music-on-hold files', () => {
    expect(musicOnHoldFiles().length).toBeGreaterThanOrEqual(5);
  });

  it('lists every fixture in transcripts.json with its file present, in both formats', () => {
    const list = fixtures();
    expect(list.length).toBeGreaterThanOrEqual(40);
    expect(list.every((f) => existsSync(f.path))).toBe(true);
    expect(new Set(list.map((f) => f.encoding))).toEqual(new Set(['pcm16', 'mulaw']));
  });
});
