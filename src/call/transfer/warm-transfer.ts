// A warm transfer: the caller hears hold music while the destination is called as a second leg;
// whoever answers hears a summary of the call from the agent; then the carrier bridges the two and
// the agent leaves. A second leg that is not answered (or hangs up before the bridge) ends the
// hold, and the caller is the agent's again.
import type { Logger } from 'pino';
import type { AgentVoice } from '../agent/agent-voice.ts';
import type { CallTransport } from '../transport.ts';

/** What the carrier does for a warm transfer (the manager builds it over the dialer). */
export interface WarmTransferCarrier {
  /** Calls `to` as a second leg; resolves once it is being dialled. Its stream comes back through `answered`. */
  consult(to: string): Promise<void>;
  /** Joins the caller and the second leg, and takes both off this service. */
  bridge(): Promise<void>;
  /** What the caller hears meanwhile, at the line's rate; looped. */
  holdAudio(): Promise<Int16Array>;
}

export const WARM_TRANSFER_DEFAULTS = {
  /** Longest the summary may take to be said before the bridge happens anyway. */
  summaryTimeoutMs: 30_000,
  /** Said to whoever answers when the model gives no summary. */
  fallbackSummary: 'I have a caller for you, transferred from the agent.',
} as const;

export interface WarmTransferOptions {
  to: string;
  carrier: WarmTransferCarrier;
  /** The caller's side of the agent's voice (hold music plays on it). */
  voice: AgentVoice;
  /** The agent's voice on the second leg. */
  consultVoice(transport: CallTransport): AgentVoice;
  /** The model's summary of the call so far, for whoever answers. */
  summary(): Promise<string>;
  log: Logger;
  connected(summary: string): void;
  failed(why: string): void;
}

export class WarmTransfer {
  private holding = true;
  private consultLine: CallTransport | null = null;
  private consultVoice: AgentVoice | null = null;
  private settled = false;
  /** The carrier is joining the two legs: their streams closing now is the bridge, not a hang-up. */
  bridging = false;

  constructor(private readonly o: WarmTransferOptions) {}

  /** Hold music for the caller, and the second leg dialled. */
  async start(): Promise<void> {
    let music: Int16Array | null = null;
    try {
      music = await this.o.carrier.holdAudio();
    } catch (error) {
      this.o.log.warn({ err: error }, 'no hold music: the caller waits in silence');
    }
    if (music) this.hold(music);
    try {
      await this.o.carrier.consult(this.o.to);
    } catch (error) {
      this.o.log.warn({ err: error, to: this.o.to }, 'the carrier could not call the transfer destination');
      this.fail('the phone line could not call them');
    }
  }

  /** The second leg answered: its stream. The agent says the summary on it, then the carrier bridges. */
  async answered(line: CallTransport): Promise<void> {
    if (this.settled) {
      line.close('call_transfer');
      return;
    }
    this.consultLine = line;
    const transfer = this;
    // Method shorthand, not arrows: see the note on handlers in session.ts. What they say is not the call's.
    line.attach({
      audio() {},
      mark(name) {
        transfer.consultVoice?.mark(name);
      },
      dtmf() {},
      hangup() {
        if (!transfer.bridging) transfer.fail('the person who answered hung up');
      },
    });
    const voice = this.o.consultVoice(line);
    this.consultVoice = voice;
    let summary: string;
    try {
      summary = await this.o.summary();
    } catch (error) {
      this.o.log.warn({ err: error }, 'no summary for the transfer: the model failed');
      summary = WARM_TRANSFER_DEFAULTS.fallbackSummary;
    }
    if (this.settled) return;
    voice.sayAll(summary);
    await voice.finished(WARM_TRANSFER_DEFAULTS.summaryTimeoutMs);
    if (this.settled) return;
    this.bridging = true;
    try {
      await this.o.carrier.bridge();
    } catch (error) {
      this.bridging = false;
      this.o.log.warn({ err: error }, 'the carrier could not bridge the transfer');
      this.fail('the phone line could not connect them');
      return;
    }
    this.settled = true;
    this.holding = false;
    voice.stop();
    this.o.connected(summary);
  }

  /** The second leg did not connect (`why`). */
  fail(why: string): void {
    if (this.settled) return;
    this.stop();
    this.o.failed(why);
  }

  /** The call is over, or the transfer: no more hold music, and the second leg is let go. */
  stop(): void {
    this.settled = true;
    this.holding = false;
    this.consultVoice?.stop();
    this.consultLine?.close('call_transfer');
  }

  /** Loops the hold audio on the caller's line while the transfer is under way. */
  private hold(music: Int16Array): void {
    if (!this.holding) return;
    // Not the caller's to cut: what they say on hold is not an answer to anything.
    const u = this.o.voice.play(music, { interruptible: false });
    void u.done.then(() => this.hold(music));
  }
}
