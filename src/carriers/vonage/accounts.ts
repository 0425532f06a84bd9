// Which Vonage account a request or call belongs to. Vonage is reached only through organizations'
// own accounts (carrier-accounts/): there is no service-wide Vonage account. A webhook about a call
// to one of an account's numbers is checked with that account's signature secret; a call from one
// is placed through its Voice application, and every later request about that call (its events,
// hang-up, transfer) uses the account the call recorded (carrier-calls.ts). The key is chosen by
// what the request is about (the called number, the call), never by what it claims to be from.
import type { CarrierAccountRepository } from '../../carrier-accounts/repository.ts';
import type { CarrierAccount } from '../../carrier-accounts/schema.ts';
import type { CarrierCallRepository } from '../carrier-calls.ts';

export interface VonageKeys {
  /** The Voice application calls are placed through; its id is the API token's application_id. */
  applicationId: string;
  /** The application's private key, PEM: signs the API token (RS256). */
  privateKey: string;
  /** The account's signature secret: signs its webhooks (HS256). */
  signatureSecret: string;
  carrierAccountId: string;
}

interface VonageCredentialsValue {
  application_id: string;
  private_key: string;
  signature_secret: string;
}

/** A Vonage account's keys, or undefined for an account at another carrier. */
export function vonageKeysOf(account: CarrierAccount): VonageKeys | undefined {
  if (account.carrier !== 'vonage') return undefined;
  const credentials = account.credentials as VonageCredentialsValue;
  return {
    applicationId: credentials.application_id,
    privateKey: credentials.private_key,
    signatureSecret: credentials.signature_secret,
    carrierAccountId: account.carrier_account_id,
  };
}

/** Vonage writes numbers without their "+" (447700900000); the accounts hold them in E.164. */
export function e164Of(vonageNumber: string): string {
  return /^[1-9]\d{5,14}$/.test(vonageNumber) ? `+${vonageNumber}` : vonageNumber;
}

/** An E.164 number as Vonage takes it: digits only. */
export function vonageNumberOf(e164: string): string {
  return e164.replace(/^\+/, '');
}

export interface VonageAccountsOptions {
  accounts: Pick<CarrierAccountRepository, 'byNumber' | 'find'>;
  carrierCalls: Pick<CarrierCallRepository, 'carrierAccountOf'>;
}

export class VonageAccounts {
  constructor(private readonly o: VonageAccountsOptions) {}

  /** The Vonage account holding the called number (E.164), with its organization. */
  async forCalled(called: string): Promise<{ orgId: string; keys: VonageKeys } | undefined> {
    const held = called ? await this.o.accounts.byNumber(called) : undefined;
    const keys = held ? vonageKeysOf(held.account) : undefined;
    return held && keys ? { orgId: held.orgId, keys } : undefined;
  }

  /** The Vonage account a call of `orgId` from `from` goes through; undefined when no Vonage account of it holds it. */
  async forOutbound(orgId: string, from: string): Promise<VonageKeys | undefined> {
    const held = await this.o.accounts.byNumber(from);
    if (!held || held.orgId !== orgId) return undefined;
    return vonageKeysOf(held.account);
  }

  /** The keys of the Vonage account a call went through; undefined when none (or the account is gone). */
  async forCall(callId: string | undefined): Promise<VonageKeys | undefined> {
    const accountId = callId ? await this.o.carrierCalls.carrierAccountOf(callId) : undefined;
    if (accountId === undefined) return undefined;
    const found = await this.o.accounts.find(accountId);
    return found ? vonageKeysOf(found.account) : undefined;
  }
}
