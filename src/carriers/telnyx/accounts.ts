// Which Telnyx account a request or call belongs to. Telnyx is reached only through organizations'
// own accounts (carrier-accounts/): there is no service-wide Telnyx account. A webhook about a call
// to one of an account's numbers is checked with that account's public key; a call from one is
// placed through it, and every later request about that call (its instruction fetch, callbacks,
// hang-up, transfer) uses the account the call recorded (carrier-calls.ts). The key is chosen by
// what the request is about (the called number, the call), never by what it claims to be from.
import type { CarrierAccountRepository } from '../../carrier-accounts/repository.ts';
import type { CarrierAccount } from '../../carrier-accounts/schema.ts';
import type { CarrierCallRepository } from '../carrier-calls.ts';

export interface TelnyxKeys {
  apiKey: string;
  /** The account's ed25519 webhook public key, base64. */
  publicKey: string;
  /** The TeXML application's connection id: calls are placed through it. */
  connectionId: string;
  carrierAccountId: string;
}

interface TelnyxCredentialsValue {
  api_key: string;
  public_key: string;
  connection_id: string;
}

/** A Telnyx account's keys, or undefined for an account at another carrier. */
export function telnyxKeysOf(account: CarrierAccount): TelnyxKeys | undefined {
  if (account.carrier !== 'telnyx') return undefined;
  const credentials = account.credentials as TelnyxCredentialsValue;
  return {
    apiKey: credentials.api_key,
    publicKey: credentials.public_key,
    connectionId: credentials.connection_id,
    carrierAccountId: account.carrier_account_id,
  };
}

export interface TelnyxAccountsOptions {
  accounts: Pick<CarrierAccountRepository, 'byNumber' | 'find'>;
  carrierCalls: Pick<CarrierCallRepository, 'carrierAccountOf'>;
}

export class TelnyxAccounts {
  constructor(private readonly o: TelnyxAccountsOptions) {}

  /** The Telnyx account holding the called number, with its organization. */
  async forCalled(called: string): Promise<{ orgId: string; keys: TelnyxKeys } | undefined> {
    const held = called ? await this.o.accounts.byNumber(called) : undefined;
    const keys = held ? telnyxKeysOf(held.account) : undefined;
    return held && keys ? { orgId: held.orgId, keys } : undefined;
  }

  /** The Telnyx account a call of `orgId` from `from` goes through; undefined when no Telnyx account of it holds it. */
  async forOutbound(orgId: string, from: string): Promise<TelnyxKeys | undefined> {
    const held = await this.o.accounts.byNumber(from);
    if (!held || held.orgId !== orgId) return undefined;
    return telnyxKeysOf(held.account);
  }

  /** The keys of the Telnyx account a call went through; undefined when none (or the account is gone). */
  async forCall(callId: string | undefined): Promise<TelnyxKeys | undefined> {
    const accountId = callId ? await this.o.carrierCalls.carrierAccountOf(callId) : undefined;
    if (accountId === undefined) return undefined;
    const found = await this.o.accounts.find(accountId);
    return found ? telnyxKeysOf(found.account) : undefined;
  }
}
