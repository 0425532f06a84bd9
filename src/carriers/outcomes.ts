// What a carrier reports about an outbound call before (or instead of) its media stream: no
// answer, failure, an answering machine, completion. Twilio's status callbacks and the simulated
// phones both land here, so both end calls the same way. A report about a call that already
// connected or ended changes nothing: the session owns a live call.
import type { CallRegistry } from '../call/registry.ts';
import type { CallService } from '../records/service.ts';

/** How a failed dial is told to the agent's model. */
const TRANSFER_FAILURES: Record<string, string> = {
  busy: 'the line was busy',
  'no-answer': 'nobody answered',
  failed: 'the call could not be placed',
  canceled: 'the call was cancelled',
};

export class CallOutcomes {
  constructor(
    private readonly calls: CallService,
    private readonly registry: CallRegistry,
  ) {}

  async noAnswer(callId: string): Promise<void> {
    await this.calls.endIfRegistered(
      callId,
      'not_connected',
      'dial_no_answer',
      'Nobody answered within the ring timeout.',
    );
  }

  async failed(callId: string, message: string): Promise<void> {
    await this.calls.endIfRegistered(callId, 'not_connected', 'dial_failed', message);
  }

  /** The transfer's destination answered: the live call ends as call_transfer. */
  transferAnswered(callId: string): void {
    this.registry.get(callId)?.transferAnswered();
  }

  /**
   * The transfer's dial ended without connecting (`status`: busy, no-answer, failed, canceled); the secret for the
   * caller's stream back, or null.
   */
  transferFailed(callId: string, status: string): string | null {
    return this.registry.get(callId)?.transferFailed(TRANSFER_FAILURES[status] ?? status) ?? null;
  }

  /**
   * A warm transfer's second leg was not answered (`status`: busy, no-answer, failed, canceled): the caller stays with
   * the agent.
   */
  consultFailed(callId: string, status: string): void {
    this.registry.get(callId)?.consultFailed(TRANSFER_FAILURES[status] ?? status);
  }

  /** Carrier machine detection: a live session leaves its voicemail; otherwise the call never connected. */
  async machineAnswered(callId: string): Promise<void> {
    const live = this.registry.get(callId);
    if (live) live.voicemailDetected();
    else
      await this.calls.endIfRegistered(
        callId,
        'not_connected',
        'voicemail_reached',
        'An answering machine answered the call.',
      );
  }

  /**
   * The carrier call is over. With a session, its stream closing ends the call (or, while the
   * caller is being transferred and has no stream, this does); without one the stream never came.
   */
  async completed(callId: string, byMachine = false): Promise<void> {
    const live = this.registry.get(callId);
    if (live) return live.carrierEnded();
    if (byMachine) return this.machineAnswered(callId);
    await this.calls.endIfRegistered(
      callId,
      'error',
      'error_service',
      'The carrier connected the call, but its media stream never reached the service.',
    );
  }
}
