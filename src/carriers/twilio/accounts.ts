// Which Twilio account a request or call belongs to. An organization's own Twilio account (carrier-accounts/) serves
// the numbers it holds: a webhook to one of them is checked with that account's auth token, a call from one is
// placed through it, and every later request about that call (hang-up, transfer, its callbacks) uses the account the
// call recorded (carrier-calls.ts). Everything else is the service-wide account's (TWILIO_*), every organization's
// default. The key that checks a callback is chosen by what the request is about (the called number, the call),
// never by what it claims (its AccountSid): an organization holding its own token could otherwise sign for another's
// call.
import type { CarrierAccountRepository } from '../../carrier-accounts/repository.ts';
import { twilioCredentialsOf, type CarrierAccount } from '../../carrier-accounts/schema.ts';
import type { CarrierCallRepository } from '../carrier-calls.ts';
import type { WebhookSignature } from './form-webhook.ts';

export interface TwilioKeys {
  accountSid: string;
  authToken: string;
  /** The organization's account these are; undefined for the service-wide account. */
  carrierAccountId: string | undefined;
}

/** Where a call from one of an organization's numbers goes. */
export type OutboundRoute =
  | { kind: 'account'; keys: TwilioKeys }
  /** The number is on the organization's account at another carrier. */
  | { kind: 'other-carrier'; account: CarrierAccount }
  /** No account of the organization holds it: the service-wide account's, if there is one. */
  | { kind: 'service' };

export interface TwilioAccountsOptions {
  accounts: Pick<CarrierAccountRepository, 'byNumber' | 'find'>;
  carrierCalls: Pick<CarrierCallRepository, 'carrierAccountOf'>;
  /** TWILIO_ACCOUNT_SID and TWILIO_AUTH_TOKEN, when both are set. */
  serviceWide: { accountSid: string; authToken: string } | undefined;
  /** TWILIO_AUTH_TOKEN: checks the service-wide account's webhooks (set without a SID for inbound-only numbers). */
  serviceToken: string | undefined;
  /** TWILIO_SIGNATURE=on: a webhook the service-wide account would sign is refused when there is no token to check. */
  signatureRequired: boolean;
}

export class TwilioAccounts {
  constructor(private readonly o: TwilioAccountsOptions) {}

  get serviceWide(): TwilioKeys | undefined {
    return this.o.serviceWide ? { ...this.o.serviceWide, carrierAccountId: undefined } : undefined;
  }

  private get serviceSigning(): WebhookSignature {
    return { authToken: this.o.serviceToken, required: this.o.signatureRequired };
  }

  /**
   * How a webhook for a call to `called` is checked (an organization's account: always, with its token), and the
   * account holding that number.
   */
  async forCalled(called: string): Promise<{ signing: WebhookSignature; carrierAccountId: string | undefined }> {
    const held = called ? await this.o.accounts.byNumber(called) : undefined;
    const credentials = held ? twilioCredentialsOf(held.account) : undefined;
    if (held && credentials)
      return {
        signing: { authToken: credentials.auth_token, required: true },
        carrierAccountId: held.account.carrier_account_id,
      };
    return { signing: this.serviceSigning, carrierAccountId: undefined };
  }

  /** The account a call of `orgId` from `from` is placed through. */
  async forOutbound(orgId: string, from: string): Promise<OutboundRoute> {
    const held = await this.o.accounts.byNumber(from);
    if (!held || held.orgId !== orgId) return { kind: 'service' };
    const credentials = twilioCredentialsOf(held.account);
    if (!credentials) return { kind: 'other-carrier', account: held.account };
    return {
      kind: 'account',
      keys: {
        accountSid: credentials.account_sid,
        authToken: credentials.auth_token,
        carrierAccountId: held.account.carrier_account_id,
      },
    };
  }

  /**
   * The keys of the account a call went through: the one it recorded, or the service-wide account. Undefined when
   * that account is gone (or there is no service-wide one).
   */
  async forCall(callId: string | undefined): Promise<TwilioKeys | undefined> {
    const accountId = callId ? await this.o.carrierCalls.carrierAccountOf(callId) : undefined;
    if (accountId === undefined) return this.serviceWide;
    const found = await this.o.accounts.find(accountId);
    const credentials = found ? twilioCredentialsOf(found.account) : undefined;
    return credentials
      ? { accountSid: credentials.account_sid, authToken: credentials.auth_token, carrierAccountId: accountId }
      : undefined;
  }

  /** How a callback about a call is checked: with its account's token (refused when that account is gone). */
  async signingForCall(callId: string | undefined): Promise<WebhookSignature> {
    const accountId = callId ? await this.o.carrierCalls.carrierAccountOf(callId) : undefined;
    if (accountId === undefined) return this.serviceSigning;
    return { authToken: (await this.forCall(callId))?.authToken, required: true };
  }
}
