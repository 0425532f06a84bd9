// A carrier that serves only some calls (an organization's own account's) passes the control of the others — a
// transfer, a warm transfer's legs — on to the carriers after it; where none of them can, the call cannot.
import { NoTransferError } from '../records/dialer.ts';

/**
 * `request` for the next carrier's `control` (a Dialer method bound to it), or a NoTransferError when it has none:
 * no account is known for the call to `doing` through.
 */
export async function passOn<R extends { callId: string }, T>(
  control: ((request: R) => Promise<T>) | undefined,
  request: R,
  doing: string,
): Promise<T> {
  if (!control) throw new NoTransferError(`no carrier account is known for call ${request.callId} to ${doing} through`);
  return control(request);
}
