// A browser call as a page would make it, without the page: the /media/web protocol over a
// real WebSocket, caller audio in real time, agent audio "played" in real time with marks
// echoed once played, and `clear` honoured. With `codec: 'opus'` it speaks and hears Opus
// packets (libopus through the product's OpusCodec) and keeps the agent audio it decoded.
import WebSocket from 'ws';
import { OpusCodec } from '../../src/audio/opus/index.ts';

export class WebCallClient {
  readonly events: Record<string, unknown>[] = [];
  audioFrames = 0;
  /** Audio bytes on the wire each way (binary message payloads). */
  bytesSent = 0;
  bytesReceived = 0;
  /** The agent's audio as heard, 16 kHz (kept only for Opus calls). */
  readonly heard: Int16Array[] = [];
  closeCode: number | undefined;
  private readonly opus: OpusCodec | undefined;
  private playEnd = 0;
  private readonly pendingMarks = new Set<NodeJS.Timeout>();
  private readonly ws: WebSocket;
  readonly opened: Promise<void>;
  readonly closed: Promise<number>;

  constructor(url: string, options: { codec?: 'pcm' | 'opus' } = {}) {
    this.opus =
      options.codec === 'opus' ? new OpusCodec({ rate: 16000, channels: 1, bitrate: 24000, complexity: 5 }) : undefined;
    this.ws = new WebSocket(url);
    this.opened = new Promise((resolve, reject) => {
      this.ws.once('open', () => resolve());
      this.ws.once('error', reject);
    });
    this.closed = new Promise((resolve) => this.ws.on('close', (code) => resolve((this.closeCode = code))));
    this.ws.on('message', (data, isBinary) => {
      if (isBinary) {
        const bytes = data as Buffer;
        this.bytesReceived += bytes.length;
        let ms = 20;
        if (this.opus) {
          const samples = this.opus.decode(bytes);
          this.heard.push(samples);
          ms = samples.length / 16;
        }
        this.audioFrames++;
        this.playEnd = Math.max(this.playEnd, performance.now()) + ms;
        return;
      }
      const event = JSON.parse(data.toString()) as Record<string, unknown>;
      this.events.push(event);
      if (event.type === 'mark') {
        const timer = setTimeout(
          () => {
            this.pendingMarks.delete(timer);
            this.send({ type: 'mark', name: event.name });
          },
          Math.max(0, this.playEnd - performance.now()),
        );
        this.pendingMarks.add(timer);
      } else if (event.type === 'clear') {
        this.playEnd = performance.now();
      }
    });
  }

  send(message: Record<string, unknown>): void {
    if (this.ws.readyState === WebSocket.OPEN) this.ws.send(JSON.stringify(message));
  }

  sendBinary(payload: Buffer): void {
    if (this.ws.readyState === WebSocket.OPEN) this.ws.send(payload, { binary: true });
  }

  /** Sends 16 kHz PCM16 in 20 ms frames at real-time pace. */
  async speak(samples: Int16Array): Promise<void> {
    const start = performance.now();
    for (let i = 0, n = 0; i < samples.length; i += 320, n++) {
      const frame = new Int16Array(320);
      frame.set(samples.subarray(i, i + 320));
      if (this.ws.readyState !== WebSocket.OPEN) return;
      const payload = this.opus ? this.opus.encode(frame) : Buffer.from(frame.buffer);
      this.bytesSent += payload.length;
      this.ws.send(payload, { binary: true });
      const wait = start + (n + 1) * 20 - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    }
  }

  /** Sends all of `samples` at once, as fast as the socket takes it (a misbehaving page). */
  flood(samples: Int16Array): void {
    for (let i = 0; i < samples.length && this.ws.readyState === WebSocket.OPEN; i += 320) {
      this.ws.send(Buffer.from(samples.buffer, samples.byteOffset + i * 2, Math.min(320, samples.length - i) * 2), {
        binary: true,
      });
    }
  }

  silence(ms: number): Promise<void> {
    return this.speak(new Int16Array((ms / 1000) * 16000));
  }

  waitFor(match: (event: Record<string, unknown>) => boolean, timeoutMs = 20_000): Promise<Record<string, unknown>> {
    return new Promise((resolve, reject) => {
      const started = Date.now();
      const check = () => {
        const found = this.events.find(match);
        if (found) return resolve(found);
        if (Date.now() - started > timeoutMs) return reject(new Error('event not seen in time'));
        setTimeout(check, 20);
      };
      check();
    });
  }

  close(): void {
    for (const timer of this.pendingMarks) clearTimeout(timer);
    this.ws.close();
  }
}
