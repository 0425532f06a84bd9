// Which SignalWire account a request or call belongs to. SignalWire is reached only through
// organizations' own accounts (carrier-accounts/, credentials {space_url, project_id, api_token,
// signing_key}): there is no service-wide one. A webhook about a call to one of an account's
// numbers is checked with that account's signing key; a call from one is placed through its space's
// LaML API with the project id and API token; every later request about that call (hang-up,
// transfer, its callbacks) uses the account the call recorded (carrier-calls.ts). The key is chosen
// by what the request is about (the called number, the call), never by what it claims to be from.
// Anything else is the carriers' after SignalWire (Twilio's): this book then answers "none".
import type { CarrierAccountRepository } from '../../carrier-accounts/repository.ts';
import type { CarrierAccount } from '../../carrier-accounts/schema.ts';
import type { CarrierCallRepository } from '../carrier-calls.ts';
import type { OutboundRoute, TwilioAccountBook, TwilioKeys } from '../twilio/accounts.ts';
import type { WebhookSignature } from '../twilio/form-webhook.ts';

interface SignalWireCredentialsValue {
  space_url: string;
  project_id: string;
  api_token: string;
  signing_key: string;
}

/** The space's host as the account gives it (`example.signalwire.com`, with or without https:// and a slash). */
export function spaceHost(spaceUrl: string): string {
  return spaceUrl
    .replace(/^https:\/\//i, '')
    .replace(/\/+$/, '')
    .toLowerCase();
}

/**
 * The LaML REST API of a space: https://{space}/api/laml, under which Twilio's paths follow (2010-04-01/Accounts/
 * {project_id}/Calls.json). `apiBase` (SIGNALWIRE_API_BASE) puts every space at one address: a stand-in in tests and
 * staging.
 */
export function lamlApiBase(spaceUrl: string, apiBase: string | undefined): string {
  return `${apiBase ?? `https://${spaceHost(spaceUrl)}`}/api/laml`;
}

export interface SignalWireAccountsOptions {
  accounts: Pick<CarrierAccountRepository, 'byNumber' | 'find'>;
  carrierCalls: Pick<CarrierCallRepository, 'carrierAccountOf'>;
  /** SIGNALWIRE_API_BASE; unset: each account's own space. */
  apiBase: string | undefined;
}

/** Nobody's key: a webhook nothing of SignalWire's can check is refused. */
const UNCHECKABLE: WebhookSignature = { authToken: undefined, required: true };

export class SignalWireAccounts implements TwilioAccountBook {
  readonly serviceWide = undefined;

  constructor(private readonly o: SignalWireAccountsOptions) {}

  private credentialsOf(account: CarrierAccount): SignalWireCredentialsValue | undefined {
    return account.carrier === 'signalwire' ? (account.credentials as SignalWireCredentialsValue) : undefined;
  }

  private keysOf(account: CarrierAccount): TwilioKeys | undefined {
    const credentials = this.credentialsOf(account);
    return credentials
      ? {
          accountSid: credentials.project_id,
          authToken: credentials.api_token,
          apiBase: lamlApiBase(credentials.space_url, this.o.apiBase),
          carrierAccountId: account.carrier_account_id,
        }
      : undefined;
  }

  async forCalled(
    called: string,
  ): Promise<{ signing: WebhookSignature; carrierAccountId: string | undefined; orgId?: string | undefined }> {
    const held = called ? await this.o.accounts.byNumber(called) : undefined;
    const credentials = held ? this.credentialsOf(held.account) : undefined;
    if (!held || !credentials) return { signing: UNCHECKABLE, carrierAccountId: undefined };
    return {
      signing: { authToken: credentials.signing_key, required: true },
      carrierAccountId: held.account.carrier_account_id,
      orgId: held.orgId,
    };
  }

  async forOutbound(orgId: string, from: string): Promise<OutboundRoute> {
    const held = await this.o.accounts.byNumber(from);
    const keys = held && held.orgId === orgId ? this.keysOf(held.account) : undefined;
    // Not a SignalWire number of the organization: the carriers after SignalWire place it.
    return keys ? { kind: 'account', keys } : { kind: 'service' };
  }

  private async accountOf(callId: string | undefined): Promise<CarrierAccount | undefined> {
    const accountId = callId ? await this.o.carrierCalls.carrierAccountOf(callId) : undefined;
    if (accountId === undefined) return undefined;
    return (await this.o.accounts.find(accountId))?.account;
  }

  async forCall(callId: string | undefined): Promise<TwilioKeys | undefined> {
    const account = await this.accountOf(callId);
    return account ? this.keysOf(account) : undefined;
  }

  async signingForCall(callId: string | undefined): Promise<WebhookSignature> {
    const account = await this.accountOf(callId);
    const credentials = account ? this.credentialsOf(account) : undefined;
    return credentials ? { authToken: credentials.signing_key, required: true } : UNCHECKABLE;
  }
}
