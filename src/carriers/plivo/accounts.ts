// Which Plivo account a request or call belongs to. Plivo is reached only through organizations'
// own accounts (carrier-accounts/): there is no service-wide Plivo account. A webhook about a call
// to one of an account's numbers is checked with that account's Auth Token; a call from one is
// placed through it, and every later request about that call (its answer URL, callbacks, hang-up,
// transfer) uses the account the call recorded (carrier-calls.ts). The token is chosen by what the
// request is about (the called number, the call), never by what it claims to be from.
import type { CarrierAccount } from '../../carrier-accounts/schema.ts';
import type { CarrierCallRepository } from '../carrier-calls.ts';
import type { CarrierAccountLookup } from '../carrier.ts';

export interface PlivoKeys {
  authId: string;
  authToken: string;
  carrierAccountId: string;
}

/** A Plivo account's keys, or undefined for an account at another carrier. */
export function plivoKeysOf(account: CarrierAccount): PlivoKeys | undefined {
  if (account.carrier !== 'plivo') return undefined;
  const credentials = account.credentials as { auth_id: string; auth_token: string };
  return {
    authId: credentials.auth_id,
    authToken: credentials.auth_token,
    carrierAccountId: account.carrier_account_id,
  };
}

/** Plivo sends numbers without "+"; accounts and agents hold them in E.164. Anything else (a SIP URI) stays. */
export const e164 = (number: string) => (/^[0-9]{3,20}$/.test(number) ? `+${number}` : number);

export class PlivoAccounts {
  constructor(
    private readonly accounts: CarrierAccountLookup,
    private readonly carrierCalls: Pick<CarrierCallRepository, 'carrierAccountOf'>,
  ) {}

  /** The Plivo account holding the called number, with its organization. */
  async forCalled(called: string): Promise<{ orgId: string; keys: PlivoKeys } | undefined> {
    const held = called ? await this.accounts.byNumber(e164(called)) : undefined;
    const keys = held ? plivoKeysOf(held.account) : undefined;
    return held && keys ? { orgId: held.orgId, keys } : undefined;
  }

  /** The Plivo account a call of `orgId` from `from` goes through; undefined when no Plivo account of it holds it. */
  async forOutbound(orgId: string, from: string): Promise<PlivoKeys | undefined> {
    const held = await this.accounts.byNumber(from);
    if (!held || held.orgId !== orgId) return undefined;
    return plivoKeysOf(held.account);
  }

  /** The keys of the Plivo account a call went through; undefined when none (or the account is gone). */
  async forCall(callId: string | undefined): Promise<PlivoKeys | undefined> {
    const accountId = callId ? await this.carrierCalls.carrierAccountOf(callId) : undefined;
    if (accountId === undefined) return undefined;
    const found = await this.accounts.find(accountId);
    return found ? plivoKeysOf(found.account) : undefined;
  }
}
