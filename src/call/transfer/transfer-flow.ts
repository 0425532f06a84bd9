// A transfer_call the model made: the line before it plays out, then the caller is handed to the
// destination, cold (the carrier dials them and the line is given up) or warm (the caller holds
// while the destination is called, told and bridged in; see warm-transfer.ts). While it is under
// way the flow has the line. A transfer that fails gives the caller back to the model, told why;
// one that connects ends the call call_transfer. The carrier reports through the entry points
// below (carrier.ts wires them to the call's registry entry).
import type { Logger } from 'pino';
import type { AgentConfig } from '../../agents/schema.ts';
import type { Timers, TimerHandle } from '../../timers.ts';
import type { AgentVoice } from '../agent/agent-voice.ts';
import type { FlowHost, LineFlow } from '../flow.ts';
import { NoTransferError } from '../../records/dialer.ts';
import { transferFailedNote } from '../model/prompts.ts';
import type { CallTransport } from '../transport.ts';
import { WarmTransfer, type WarmTransferCarrier } from './warm-transfer.ts';

export const TRANSFER_DEFAULTS = {
  /** Longest wait for the line before the transfer to play. */
  linePlayedMs: 15_000,
  /** Longest wait for the caller to come back on a new stream after a transfer failed. */
  returnMs: 15_000,
} as const;

/** Starts a cold transfer of the caller to `to` on the carrier (the line is given up); throws when it cannot. */
export type ColdTransfer = (to: string) => Promise<void>;

export interface TransferFlowOptions {
  /** The agent's tools: a transfer_call tool says its mode and its line. */
  tools: AgentConfig['tools'];
  /** Absent: the call cannot transfer, and transfer_call only ends it. */
  cold?: ColdTransfer | undefined;
  /** Absent: a warm transfer_call is done cold. */
  warm?: WarmTransferCarrier | undefined;
  /** The caller's side of the agent's voice. */
  voice: AgentVoice;
  /** The agent's voice on a warm transfer's second leg. */
  consultVoice(line: CallTransport): AgentVoice;
  /** The model's summary of the call so far, for whoever answers a warm transfer. */
  summary(): Promise<string>;
  timers: Timers;
  host: FlowHost;
  log: Logger;
}

export class TransferFlow implements LineFlow {
  /** Under way: the caller is being put through to `to`; `failed` once the carrier said it did not connect. */
  private transferring: { to: string; failed: string | null; returnTimer: TimerHandle | undefined } | null = null;
  /** A warm transfer's second leg being called, told and bridged. */
  private warm: WarmTransfer | null = null;

  constructor(private readonly o: TransferFlowOptions) {}

  get holdsLine(): boolean {
    return this.transferring !== null;
  }

  /**
   * The model called transfer_call `name` to `to`: warm if the tool asks and the carrier can, else cold if it can, else
   * the call ends.
   */
  start(name: string, to: string): void {
    const tool = this.o.tools.find((t) => 'name' in t && t.name === name);
    const settings = tool?.type === 'transfer_call' ? tool : undefined;
    if (settings?.mode === 'warm' && this.o.warm) void this.startWarm(to, this.o.warm, settings.transfer_message);
    else if (this.o.cold) void this.startCold(to, this.o.cold, settings?.transfer_message);
    else this.o.host.act({ kind: 'end', reason: 'call_transfer', message: `Transferred to ${to}.` });
  }

  /** The destination answered: the caller is theirs now, and this call is over. */
  answered(): void {
    const transfer = this.transferring;
    if (!transfer || !this.o.host.live) return;
    this.o.host.act({
      kind: 'end',
      reason: 'call_transfer',
      message: `Transferred to ${transfer.to}.`,
      transferred: { destination: transfer.to, at: this.o.timers.now() },
    });
  }

  /**
   * The transfer did not connect (`why`: busy, no answer, failed): the caller comes back on a new stream. False when no
   * transfer was under way.
   */
  failed(why: string): boolean {
    const transfer = this.transferring;
    if (!transfer || transfer.failed !== null || !this.o.host.live) return false;
    transfer.failed = why;
    // The carrier sends the caller back at once; one who never arrives has hung up.
    transfer.returnTimer = this.o.timers.setTimeout(
      () =>
        this.o.host.act({
          kind: 'end',
          reason: 'user_hangup',
          message: `The transfer to ${transfer.to} failed (${why}) and the caller did not come back.`,
        }),
      TRANSFER_DEFAULTS.returnMs,
    );
    return true;
  }

  /** The caller is back (on a new stream after a failed transfer, or off hold): the model is told, and answers. */
  resume(): void {
    const transfer = this.transferring;
    if (!transfer || !this.o.host.live) return;
    this.o.timers.clearTimeout(transfer.returnTimer);
    this.transferring = null;
    this.o.host.act({
      kind: 'give_back',
      note: transferFailedNote(transfer.to, transfer.failed ?? 'it could not be started'),
    });
  }

  /** A warm transfer's second leg answered: `line` is its stream. False when no warm transfer is waiting for one. */
  consultAnswered(line: CallTransport): boolean {
    if (!this.warm || !this.o.host.live) return false;
    void this.warm.answered(line);
    return true;
  }

  /** A warm transfer's second leg did not connect (`why`). */
  consultFailed(why: string): void {
    this.warm?.fail(why);
  }

  /** The carrier says the call is over (the caller hung up while being transferred). */
  carrierEnded(): void {
    // The carrier ends the caller's leg as it bridges a warm transfer: that is the transfer, not a hang-up.
    if (this.warm?.bridging) return;
    if (this.transferring && this.o.host.live)
      this.o.host.act({
        kind: 'end',
        reason: 'user_hangup',
        message: `The caller hung up while being transferred to ${this.transferring.to}.`,
      });
  }

  stop(): void {
    if (this.transferring) this.o.timers.clearTimeout(this.transferring.returnTimer);
    this.warm?.stop();
  }

  /**
   * The line before the transfer plays out, then the carrier dials the destination; a carrier that refuses sends the
   * caller straight back.
   */
  private async startCold(to: string, cold: ColdTransfer, message: string | undefined): Promise<void> {
    if (!(await this.linePlayed(to, message))) return;
    try {
      await cold(to);
      this.o.log.info({ to }, 'transfer started');
    } catch (error) {
      if (error instanceof NoTransferError) {
        // As on a line without transfers (start): the call ends, and the caller is the destination's to reach.
        this.o.host.act({ kind: 'end', reason: 'call_transfer', message: `Transferred to ${to}.` });
        return;
      }
      this.o.log.warn({ err: error, to }, 'the carrier could not start the transfer');
      if (this.transferring) this.transferring.failed = 'the phone line could not start it';
      this.resume();
    }
  }

  /**
   * The line before the transfer plays out; then the caller holds while the destination is called, told, and bridged
   * in.
   */
  private async startWarm(to: string, carrier: WarmTransferCarrier, message: string | undefined): Promise<void> {
    if (!(await this.linePlayed(to, message))) return;
    const flow = this;
    const log = this.o.log.child({ transfer_to: to });
    this.warm = new WarmTransfer({
      to,
      carrier,
      voice: this.o.voice,
      consultVoice: this.o.consultVoice,
      summary: this.o.summary,
      log,
      connected(summary) {
        flow.warm = null;
        // The hold music was the last thing on the caller's line, which is the destination's now.
        flow.o.voice.interrupt({ force: true });
        flow.o.host.act({
          kind: 'end',
          reason: 'call_transfer',
          message: `Transferred to ${to} after telling them: ${summary}`,
          transferred: { destination: to, at: flow.o.timers.now() },
        });
      },
      failed(why) {
        flow.warm = null;
        // The hold music stops; the caller is the agent's again.
        flow.o.voice.interrupt({ force: true });
        if (flow.transferring) flow.transferring.failed = why;
        flow.resume();
      },
    });
    log.info('warm transfer started: the caller is on hold');
    await this.warm.start();
  }

  /**
   * A transfer to `to` begins: the tool's `message` is said after the model's words, and both play out; false if the
   * call or the transfer ended meanwhile.
   */
  private async linePlayed(to: string, message: string | undefined): Promise<boolean> {
    this.transferring = { to, failed: null, returnTimer: undefined };
    this.o.host.act({ kind: 'take_turn', cut: false });
    if (message) this.o.host.act({ kind: 'say', text: message });
    await this.o.voice.finished(TRANSFER_DEFAULTS.linePlayedMs);
    return this.o.host.live && this.transferring?.to === to;
  }
}
