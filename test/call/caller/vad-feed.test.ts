import { describe, expect, it } from 'vitest';
import { VadFeed } from '../../../src/call/caller/vad-feed.ts';
import type { VadEvent, VadStream } from '../../../src/speech/types.ts';
import { settle } from '../../helpers/session-fakes.ts';

/** A VAD whose pushes resolve only when the test says so, to see how many run at once. */
class HeldVad implements VadStream {
  lastProbability = 0;
  speaking = false;
  readonly pushed: number[] = [];
  readonly waiting: { resolve: (events: VadEvent[]) => void; reject: (error: Error) => void }[] = [];
  push(samples: Int16Array): Promise<VadEvent[]> {
    this.pushed.push(samples[0]!);
    return new Promise((resolve, reject) => this.waiting.push({ resolve, reject }));
  }
  reset(): void {}
  close(): void {}
}

const frame = (n: number) => new Int16Array(4).fill(n);

describe('VadFeed', () => {
  it('hands the VAD one frame at a time, in order, and passes on what each push found', async () => {
    const vad = new HeldVad();
    const seen: VadEvent[] = [];
    const notes: string[] = [];
    const feed = new VadFeed<string>(
      vad,
      (events, note) => {
        seen.push(...events);
        notes.push(note);
      },
      () => undefined,
    );
    feed.push(frame(1), 'one');
    feed.push(frame(2), 'two');
    feed.push(frame(3), 'three');
    expect(vad.pushed).toEqual([1]);
    vad.waiting.shift()!.resolve([{ type: 'speech_start', at: 0.02 }]);
    await settle();
    expect(vad.pushed).toEqual([1, 2]);
    vad.waiting.shift()!.resolve([]);
    await settle();
    vad.waiting.shift()!.resolve([{ type: 'speech_end', at: 0.06 }]);
    await settle();
    expect(vad.pushed).toEqual([1, 2, 3]);
    expect(seen.map((e) => e.type)).toEqual(['speech_start', 'speech_end']);
    // Each frame's note comes back with what the VAD found in that frame.
    expect(notes).toEqual(['one', 'two', 'three']);
  });

  it('reports a failure once and feeds the VAD nothing more', async () => {
    const vad = new HeldVad();
    const failures: unknown[] = [];
    const feed = new VadFeed(
      vad,
      () => undefined,
      (error) => failures.push(error),
    );
    feed.push(frame(1), 1);
    feed.push(frame(2), 2);
    vad.waiting.shift()!.reject(new Error('inference failed'));
    await settle();
    feed.push(frame(3), 3);
    await settle();
    expect(failures).toHaveLength(1);
    expect(vad.pushed).toEqual([1]);
  });

  it('drops what is queued once stopped, and delivers no more events', async () => {
    const vad = new HeldVad();
    const seen: VadEvent[] = [];
    const feed = new VadFeed(
      vad,
      (events) => seen.push(...events),
      () => undefined,
    );
    feed.push(frame(1), 1);
    feed.push(frame(2), 2);
    feed.stop();
    vad.waiting.shift()!.resolve([{ type: 'speech_start', at: 0 }]);
    await settle();
    expect(vad.pushed).toEqual([1]);
    expect(seen).toEqual([]);
  });
});
