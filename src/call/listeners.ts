// Who listens to a live call through the API: each gets the call's events as the browser page does
// and its audio, both parties mixed, as PCM16 at 16 kHz in 20 ms frames. Nothing is done while
// nobody listens; a listener that cannot keep up is its own problem (the socket drops it), never
// the call's.
import { INTERNAL_SAMPLE_RATE } from '../audio/pcm.ts';
import { Resampler } from '../audio/resampler.ts';
import type { SessionNotice } from './transport.ts';

export interface CallListener {
  notice(notice: SessionNotice): void;
  /** Mixed audio of the call, PCM16 mono 16 kHz. */
  audio(samples: Int16Array): void;
  /** The call is over: no more of either. */
  ended(): void;
}

export class CallListeners {
  private readonly listeners = new Set<CallListener>();
  /** Agent frames sent and not yet mixed with the caller's frame of the same moment. */
  private agentFrames: Int16Array[] = [];
  private readonly upsampler: Resampler | null;

  /** `rate`: the line's rate (8 kHz on a phone); the audio listeners get is 16 kHz. */
  constructor(rate: number) {
    this.upsampler = rate === INTERNAL_SAMPLE_RATE ? null : new Resampler(rate, INTERNAL_SAMPLE_RATE);
  }

  get active(): boolean {
    return this.listeners.size > 0;
  }

  add(listener: CallListener): () => void {
    this.listeners.add(listener);
    return () => {
      this.listeners.delete(listener);
      if (this.listeners.size === 0) this.agentFrames = [];
    };
  }

  notice(notice: SessionNotice): void {
    for (const listener of this.listeners) listener.notice(notice);
  }

  /** A frame the agent's voice sent out: mixed into the next caller frame. */
  agent(frame: Int16Array): void {
    // Bounded: with no caller audio to pace them (a muted page), old agent frames go.
    if (this.agentFrames.length >= 50) this.agentFrames.shift();
    this.agentFrames.push(frame);
  }

  /** A caller frame: the caller's and the agent's audio of this moment, mixed, go to every listener. */
  caller(frame: Int16Array): void {
    const agent = this.agentFrames.shift();
    let mixed = frame;
    if (agent) {
      mixed = new Int16Array(frame.length);
      for (let i = 0; i < frame.length; i++) mixed[i] = Math.max(-32768, Math.min(32767, frame[i]! + (agent[i] ?? 0)));
    }
    const out = this.upsampler ? this.upsampler.push(mixed) : mixed;
    for (const listener of this.listeners) listener.audio(out);
  }

  end(): void {
    for (const listener of this.listeners) listener.ended();
    this.listeners.clear();
  }
}
