// Where the carrier reports on a transfer: the destination answered, the transfer failed (the
// caller then comes back on a new stream of the call, opened with a secret made for it), a warm
// transfer's second leg opened its stream (with the secret it was dialled with) or did not connect,
// or the call ended. The call's registry entry forwards each report here.
import type { RandomHex } from '../../clock.ts';
import { hashStreamSecret, streamSecretMatches } from '../../records/stream-secret.ts';
import type { ActiveCall } from '../registry.ts';
import type { CallTransport } from '../transport.ts';
import type { TransferFlow } from './transfer-flow.ts';

/** The line a transfer's caller comes back on: the session's line, which takes the new stream. */
export interface ReturnLine {
  replace(next: CallTransport): void;
}

export type TransferEntryPoints = Pick<
  ActiveCall,
  'transferAnswered' | 'transferFailed' | 'returnStream' | 'consultFailed' | 'carrierEnded'
>;

export class TransferReports implements TransferEntryPoints {
  private returnSecretHash: string | null = null;
  private consultSecretHash: string | null = null;

  /** `flow`: the call's transfer flow (asked for once a report comes, after the session exists). */
  constructor(
    private readonly flow: () => TransferFlow,
    private readonly line: ReturnLine,
    private readonly random: RandomHex | undefined,
  ) {}

  /** A warm transfer's second leg is dialled with `secret`: its stream is expected with it. */
  expectConsult(secret: string): void {
    this.consultSecretHash = hashStreamSecret(secret);
  }

  transferAnswered(): void {
    this.flow().answered();
  }

  transferFailed(why: string): string | null {
    // The caller comes back on a new stream of this call, opened with a secret made for it.
    const secret = this.random?.(24);
    if (!secret || !this.flow().failed(why)) return null;
    this.returnSecretHash = hashStreamSecret(secret);
    return secret;
  }

  returnStream(secret: string, next: CallTransport): boolean {
    if (streamSecretMatches(secret, this.consultSecretHash)) {
      this.consultSecretHash = null;
      return this.flow().consultAnswered(next);
    }
    if (!streamSecretMatches(secret, this.returnSecretHash)) return false;
    this.returnSecretHash = null;
    this.line.replace(next);
    this.flow().resume();
    return true;
  }

  consultFailed(why: string): void {
    this.flow().consultFailed(why);
  }

  carrierEnded(): void {
    this.flow().carrierEnded();
  }
}
