// The call's line as its session sees it: one media connection, or one after another. A cold
// transfer gives the current connection up (the carrier closes it to dial the destination); if the
// transfer fails, the caller comes back on a new connection of the same call, and every part of the
// session goes on talking to this line, which forwards to whichever connection is current.
import type { DisconnectionReason } from '../records/record.ts';
import type { CallTransport, SessionNotice, TransportHandlers } from './transport.ts';

export class CallLine implements CallTransport {
  readonly kind: CallTransport['kind'];
  readonly sampleRate: CallTransport['sampleRate'];
  readonly lineEncoding: CallTransport['lineEncoding'];
  private current: CallTransport;
  private handlers: TransportHandlers | null = null;
  /**
   * The current connection is being given up (a transfer): nothing more goes out on it, and its closing is not the
   * caller hanging up.
   */
  private released = false;

  constructor(first: CallTransport) {
    this.current = first;
    this.kind = first.kind;
    this.sampleRate = first.sampleRate;
    this.lineEncoding = first.lineEncoding;
  }

  /** The carrier's id of the call on the current connection, when it has one (Twilio's CallSid). */
  get carrierCallId(): string | undefined {
    return this.current.carrierCallId;
  }

  attach(handlers: TransportHandlers): void {
    this.handlers = handlers;
    this.connect(this.current);
  }

  /**
   * The carrier takes the current connection away (`handOver`: a transfer's redirect, a bridge): its
   * closing is not the caller hanging up. If the carrier refuses, the connection is the caller's again.
   */
  async handOver(carrierWork: () => Promise<void>): Promise<void> {
    this.released = true;
    try {
      await carrierWork();
    } catch (error) {
      this.released = false;
      throw error;
    }
  }

  /** The caller is back on a new connection. */
  replace(next: CallTransport): void {
    this.current = next;
    this.released = false;
    this.connect(next);
  }

  sendAudio(frame: Int16Array): void {
    if (!this.released) this.current.sendAudio(frame);
  }

  sendMark(name: string): void {
    if (!this.released) this.current.sendMark(name);
  }

  clear(): void {
    if (!this.released) this.current.clear();
  }

  notify(notice: SessionNotice): void {
    this.current.notify(notice);
  }

  close(reason: DisconnectionReason): void {
    this.current.close(reason);
  }

  private connect(connection: CallTransport): void {
    const line = this;
    const handlers = this.handlers;
    if (!handlers) return;
    // Method shorthand, not arrows: see the note on handlers in session.ts.
    connection.attach({
      audio(frame) {
        if (line.current === connection) handlers.audio(frame);
      },
      mark(name) {
        if (line.current === connection) handlers.mark(name);
      },
      dtmf(digit) {
        if (line.current === connection) handlers.dtmf(digit);
      },
      hangup(message) {
        if (line.current === connection && !line.released) handlers.hangup(message);
      },
    });
  }
}
