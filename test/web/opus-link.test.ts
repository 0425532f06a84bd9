// The page's Opus link (media/web/opus.js) under Node, with WebCodecs stand-ins whose decoder
// answers later, as a browser's does: marks keep their place behind the audio before them, and
// a barge-in's clear passes on the marks still waiting. (Chromium runs the real one in
// test/e2e/web-call-real.test.ts.)
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

type Played = { type: string; name?: string; rate?: number; pcm?: ArrayBuffer };
interface OpusLinkModule {
  OpusLink: new (
    send: (packet: ArrayBuffer) => void,
    play: (message: Played) => void,
    fail: (error: Error) => void,
  ) => {
    encode(pcm: ArrayBuffer): void;
    decode(packet: ArrayBuffer): void;
    mark(name: string): void;
    clear(): void;
    close(): void;
  };
}

const later = () => new Promise((resolve) => setTimeout(resolve, 2));

/** A decoder that outputs each chunk a little later, in order, and flushes after every output. */
class SlowDecoder {
  state = 'unconfigured';
  private queue: Promise<void> = Promise.resolve();
  private epoch = 0;
  constructor(private readonly init: { output: (data: unknown) => void }) {}
  configure() {
    this.state = 'configured';
  }
  decode(chunk: { byteLength: number }) {
    const epoch = this.epoch;
    this.queue = this.queue.then(async () => {
      await later();
      if (epoch !== this.epoch) return;
      this.init.output({
        sampleRate: 48000,
        numberOfFrames: 960,
        copyTo: (dest: Float32Array) => dest.fill(chunk.byteLength / 100),
        close: () => undefined,
      });
    });
  }
  flush() {
    const epoch = this.epoch;
    return this.queue.then(() => {
      if (epoch !== this.epoch) throw new DOMException('reset', 'AbortError');
    });
  }
  reset() {
    this.epoch++;
    this.state = 'unconfigured';
  }
  close() {
    this.state = 'closed';
  }
}

class InstantEncoder {
  state = 'unconfigured';
  constructor(
    private readonly init: { output: (chunk: { byteLength: number; copyTo(dest: ArrayBuffer): void }) => void },
  ) {}
  configure() {
    this.state = 'configured';
  }
  encode(data: { numberOfFrames: number }) {
    this.init.output({ byteLength: 40, copyTo: (dest) => new Uint8Array(dest).fill(data.numberOfFrames % 256) });
  }
  close() {
    this.state = 'closed';
  }
}

const globals = globalThis as Record<string, unknown>;
const stand_ins = {
  AudioEncoder: InstantEncoder,
  AudioDecoder: SlowDecoder,
  AudioData: class {
    numberOfFrames: number;
    constructor(init: { numberOfFrames: number }) {
      this.numberOfFrames = init.numberOfFrames;
    }
    close() {}
  },
  EncodedAudioChunk: class {
    byteLength: number;
    constructor(init: { data: ArrayBuffer }) {
      this.byteLength = init.data.byteLength;
    }
  },
};
beforeEach(() => Object.assign(globals, stand_ins));
afterEach(() => {
  for (const name of Object.keys(stand_ins)) delete globals[name];
});

const load = async () =>
  (await import(
    pathToFileURL(join(import.meta.dirname, '..', '..', 'media', 'web', 'opus.js')).href
  )) as OpusLinkModule;

describe('the page’s Opus link', () => {
  it('passes a mark to the player only after the audio decoded before it, telling the player the decoder’s rate first', async () => {
    const { OpusLink } = await load();
    const played: Played[] = [];
    const link = new OpusLink(
      () => undefined,
      (m) => played.push(m),
      (e) => {
        throw e;
      },
    );
    link.mark('u1:start');
    for (let i = 0; i < 3; i++) link.decode(new ArrayBuffer(50));
    link.mark('u1:end');
    link.decode(new ArrayBuffer(50));
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(played.map((m) => (m.type === 'mark' ? m.name : m.type))).toEqual([
      'u1:start',
      'rate',
      'audio',
      'audio',
      'audio',
      'u1:end',
      'audio',
    ]);
    expect(played[1]).toMatchObject({ rate: 48000 });
    expect(new Int16Array(played[2]!.pcm!)[0]).toBe(Math.trunc(0.5 * 0x7fff));
  });

  it('on clear, gives the player the marks still waiting and then the clear, and drops audio still being decoded', async () => {
    const { OpusLink } = await load();
    const played: Played[] = [];
    const link = new OpusLink(
      () => undefined,
      (m) => played.push(m),
      (e) => {
        throw e;
      },
    );
    for (let i = 0; i < 3; i++) link.decode(new ArrayBuffer(50));
    link.mark('u2:end');
    link.clear();
    link.decode(new ArrayBuffer(50)); // the next utterance, after the barge-in
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(played.map((m) => (m.type === 'mark' ? m.name : m.type))).toEqual(['u2:end', 'clear', 'rate', 'audio']);
  });

  it('sends one packet per 20 ms frame from the microphone', async () => {
    const { OpusLink } = await load();
    const sent: ArrayBuffer[] = [];
    const link = new OpusLink(
      (p) => sent.push(p),
      () => undefined,
      (e) => {
        throw e;
      },
    );
    for (let i = 0; i < 5; i++) link.encode(new ArrayBuffer(640));
    expect(sent).toHaveLength(5);
    expect(new Uint8Array(sent[0]!)[0]).toBe(320 % 256);
    link.close();
  });
});
