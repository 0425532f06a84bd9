// Simulated phones for development, demos and load tests: numbers listed in SIM_NUMBERS are
// "called" without a carrier. An answering phone opens this service's own /media/twilio
// stream exactly as Twilio would (call_id and secret as custom parameters) and speaks its
// script; the others ring out, fail, or are taken by an answering machine. A simulated phone's
// call can be transferred to another: one that answers takes the caller (the call leaves the
// service), one busy, failing or not answering sends the caller back to the agent on a new stream,
// where its script goes on. Every other number goes to the fallback dialer (Twilio, or none).
import type { Logger } from 'pino';
import type { CallRegistry } from '../../call/registry.ts';
import type { ConsultRequest, DialRequest, DialResult, Dialer, TransferRequest } from '../../records/dialer.ts';
import type { CallOutcomes } from '../outcomes.ts';
import { liveAgentWords, SimCallee } from './callee.ts';
import { SILENT_SCRIPT, type SimScript } from './script.ts';
import type { SimPhone } from './numbers.ts';
import { TwilioStreamCaller } from './twilio-stream.ts';

export interface SimDialerOptions {
  phones: Map<string, SimPhone>;
  /** Loaded scripts by name (every script a phone names). */
  scripts: Map<string, SimScript>;
  /** ws:// address of this service's Twilio media endpoint. */
  mediaUrl: () => string;
  /** Set once CallService exists (it needs the dialer first). */
  outcomes: () => CallOutcomes;
  /** The live calls, whose transcript a script's `expect` steps read; set with outcomes. */
  registry?: (() => CallRegistry | undefined) | undefined;
  /** Where a simulated caller's pauses fall; Math.random by default. */
  random?: (() => number) | undefined;
  ringTimeoutMs: number;
  /** How long an answering phone rings first. */
  answerDelayMs: number;
  fallback: Dialer;
  log: Logger;
}

interface LiveSimCall {
  timer: NodeJS.Timeout | undefined;
  caller: TwilioStreamCaller | undefined;
  callee?: SimCallee;
  /** A warm transfer's second leg, once a simulated destination answered. */
  consult?: TwilioStreamCaller;
  hungUp: boolean;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms).unref());

export class SimDialer implements Dialer {
  readonly name = 'sim';
  private readonly live = new Map<string, LiveSimCall>();
  private readonly running = new Set<Promise<void>>();

  constructor(private readonly o: SimDialerOptions) {}

  /** A simulated phone shows nobody anything; other numbers are the fallback carrier's. */
  showsCallerId(to: string): boolean {
    return this.o.phones.has(to) ? false : this.o.fallback.showsCallerId(to);
  }

  /** The calling number is the fallback carrier's to check: a simulated phone takes any. */
  async checkFrom(orgId: string, from: string): Promise<void> {
    return this.o.fallback.checkFrom?.(orgId, from);
  }

  async dial(request: DialRequest): Promise<DialResult> {
    const phone = this.o.phones.get(request.to);
    if (!phone) return this.o.fallback.dial(request);
    const carrierCallId = `SIM${request.callId}`;
    switch (phone.behavior) {
      case 'fail':
        return {
          status: 'failed',
          reason: 'dial_failed',
          message: `The simulated phone ${request.to} refused the call.`,
        };
      case 'busy':
        return { status: 'failed', reason: 'dial_failed', message: `The simulated phone ${request.to} is busy.` };
      case 'no_answer':
        this.after(request.callId, this.o.ringTimeoutMs, () => this.o.outcomes().noAnswer(request.callId));
        return { status: 'dialing', carrierCallId };
      case 'voicemail':
        // Like carrier machine detection for an agent that asked for it the older way (voicemail_detection):
        // the machine is reported, not talked to. Otherwise it answers with its greeting, which the service hears.
        if (request.agent.config.voicemail_detection && !request.agent.config.voicemail) {
          this.after(request.callId, this.o.answerDelayMs, () => this.o.outcomes().machineAnswered(request.callId));
          return { status: 'dialing', carrierCallId };
        }
        this.after(request.callId, this.o.answerDelayMs, () => this.answer(request, phone));
        return { status: 'dialing', carrierCallId };
      case 'answer':
        this.after(request.callId, this.o.answerDelayMs, () => this.answer(request, phone));
        return { status: 'dialing', carrierCallId };
    }
  }

  /**
   * A simulated phone's call goes to another simulated phone (the carrier ends the agent's stream,
   * as Twilio does on a redirect); other calls transfer on the fallback carrier.
   */
  async transfer(request: TransferRequest): Promise<void> {
    const call = this.live.get(request.callId);
    if (!call) {
      if (!this.o.fallback.transfer) throw new Error('this carrier cannot transfer calls');
      return this.o.fallback.transfer(request);
    }
    const destination = this.destination(request.to);
    if (!call.caller || !call.callee || call.caller.closed) throw new Error('the simulated phone is not on the line');
    call.callee.hold();
    await call.caller.hangUp();
    this.track(this.dialTransfer(request, call, destination.behavior), request.callId, 'simulated transfer failed');
  }

  /**
   * A warm transfer's second leg to a simulated phone: one that answers opens its own stream to the
   * agent and speaks its script; one busy, failing or not answering is reported so.
   */
  async consult(request: ConsultRequest): Promise<{ carrierCallId: string }> {
    const call = this.live.get(request.callId);
    if (!call) {
      if (!this.o.fallback.consult) throw new Error('this carrier cannot place a transfer call');
      return this.o.fallback.consult(request);
    }
    this.track(
      this.ringConsult(request, call, this.destination(request.to)),
      request.callId,
      'simulated transfer call failed',
    );
    return { carrierCallId: `SIMC${request.callId}` };
  }

  /**
   * A media stream to this service for call `callId`, as Twilio opens one (call_id and secret as its parameters);
   * `callSid` keeps the carrier call it belongs to.
   */
  private streamTo(callId: string, secret: string, callSid?: string): TwilioStreamCaller {
    return new TwilioStreamCaller({
      url: this.o.mediaUrl(),
      customParameters: { call_id: callId, secret },
      ...(callSid ? { callSid } : {}),
    });
  }

  /** A simulated call's transfer destination: another simulated phone. */
  private destination(to: string): SimPhone {
    const phone = this.o.phones.get(to);
    if (!phone) throw new Error(`${to} is not a simulated phone: a simulated call can only be transferred to another`);
    return phone;
  }

  /** Work a simulated phone does in the background: logged if it fails, awaited by close(). */
  private track(work: Promise<void>, callId: string, failure: string): void {
    const tracked = work
      .catch((error: unknown) => this.o.log.error({ err: error, call_id: callId }, failure))
      .finally(() => this.running.delete(tracked));
    this.running.add(tracked);
  }

  /** Joins the caller and the second leg: both leave the service (the caller's script is over). */
  async bridge(request: { callId: string; carrierCallId: string; consultCarrierCallId: string }): Promise<void> {
    const call = this.live.get(request.callId);
    if (!call) {
      if (!this.o.fallback.bridge) throw new Error('this carrier cannot bridge calls');
      return this.o.fallback.bridge(request);
    }
    this.o.log.info(
      { call_id: request.callId },
      'simulated warm transfer bridged: the caller is with the person who answered',
    );
    call.callee?.hold();
    await Promise.all([call.consult?.hangUp(), call.caller?.hangUp()]);
    call.callee?.release();
  }

  private async ringConsult(request: ConsultRequest, call: LiveSimCall, destination: SimPhone): Promise<void> {
    const outcomes = this.o.outcomes();
    if (destination.behavior === 'busy' || destination.behavior === 'fail')
      return outcomes.consultFailed(request.callId, destination.behavior === 'busy' ? 'busy' : 'failed');
    if (destination.behavior === 'no_answer') {
      await sleep(this.o.ringTimeoutMs);
      return outcomes.consultFailed(request.callId, 'no-answer');
    }
    await sleep(this.o.answerDelayMs);
    if (call.hungUp) return;
    const leg = this.streamTo(request.callId, request.streamSecret);
    call.consult = leg;
    await leg.connect();
    const script = destination.script ? (this.o.scripts.get(destination.script) ?? SILENT_SCRIPT) : SILENT_SCRIPT;
    await new SimCallee({
      caller: leg,
      script,
      random: this.o.random ?? Math.random,
      log: this.o.log.child({ call_id: request.callId, leg: 'transfer' }),
    }).run();
  }

  /** The destination rings as its behavior says; a failed dial brings the caller back to the agent. */
  private async dialTransfer(
    request: TransferRequest,
    call: LiveSimCall,
    behavior: SimPhone['behavior'],
  ): Promise<void> {
    const outcomes = this.o.outcomes();
    const log = this.o.log.child({ call_id: request.callId, to: request.to });
    let status: string;
    if (behavior === 'answer' || behavior === 'voicemail') {
      await sleep(this.o.answerDelayMs);
      log.info('simulated transfer connected: the caller is with the destination');
      outcomes.transferAnswered(request.callId);
      call.callee?.release();
      return;
    }
    if (behavior === 'no_answer') {
      await sleep(this.o.ringTimeoutMs);
      status = 'no-answer';
    } else status = behavior === 'busy' ? 'busy' : 'failed';
    const secret = outcomes.transferFailed(request.callId, status);
    if (!secret || call.hungUp) {
      call.callee?.release();
      return;
    }
    log.info({ status }, 'simulated transfer failed: the caller goes back to the agent');
    const back = this.streamTo(request.callId, secret, call.caller?.callSid);
    await back.connect();
    call.caller = back;
    call.callee?.resume(back);
  }

  /** A simulated call is hung up here; any other goes to the fallback carrier (it placed it). */
  async hangUpCall(callId: string): Promise<void> {
    const call = this.live.get(callId);
    if (!call) return this.o.fallback.hangUpCall?.(callId);
    call.hungUp = true;
    if (call.timer) clearTimeout(call.timer);
    await call.caller?.hangUp();
  }

  /** Hangs up every simulated call (service shutdown). */
  async close(): Promise<void> {
    await Promise.allSettled([...this.live.keys()].map((id) => this.hangUpCall(id)));
    await Promise.allSettled([...this.running]);
  }

  private after(callId: string, ms: number, then: () => void | Promise<void>): void {
    const call: LiveSimCall = { timer: undefined, caller: undefined, hungUp: false };
    this.live.set(callId, call);
    call.timer = setTimeout(() => {
      call.timer = undefined;
      const work = Promise.resolve()
        .then(then)
        .catch((error: unknown) => this.o.log.error({ err: error, call_id: callId }, 'simulated phone failed'))
        .finally(() => {
          this.running.delete(work);
          if (this.live.get(callId) === call) this.live.delete(callId);
        });
      this.running.add(work);
    }, ms);
  }

  private async answer(request: DialRequest, phone: SimPhone): Promise<void> {
    const call = this.live.get(request.callId);
    if (!call || call.hungUp) return;
    const script = phone.script ? (this.o.scripts.get(phone.script) ?? SILENT_SCRIPT) : SILENT_SCRIPT;
    const caller = this.streamTo(request.callId, request.streamSecret);
    call.caller = caller;
    try {
      await caller.connect();
    } catch (error) {
      this.o.log.warn({ err: error, call_id: request.callId }, 'simulated phone could not open the media stream');
      await this.o.outcomes().completed(request.callId);
      return;
    }
    const needsWords = script.steps.some((step) => step.kind === 'expect');
    const callee: SimCallee = new SimCallee({
      caller,
      script,
      random: this.o.random ?? Math.random,
      agentWords: needsWords ? liveAgentWords(() => this.o.registry?.(), request.callId, caller) : undefined,
      log: this.o.log.child({ call_id: request.callId }),
    });
    call.callee = callee;
    const result = await callee.run();
    // After a transfer that failed, the callee is on the line it came back on.
    const line = callee.line;
    if (result.ok && !line.closed && script.steps.at(-1)?.kind !== 'hangup')
      await Promise.race([line.waitForClose(), sleep(script.maxMs)]);
    await line.hangUp();
    // The carrier's "completed": changes nothing when the session ended the call, which is the usual case.
    await this.o.outcomes().completed(request.callId);
  }
}
