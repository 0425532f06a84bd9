// A Twilio account's credentials are tried before they are stored (carriers/account-check.ts): GET
// /2010-04-01/Accounts/{AccountSid}.json with the SID and auth token as HTTP basic auth, the cheapest
// authenticated request Twilio offers (it reads the account resource, `{"sid", "friendly_name",
// "status": "active" | "suspended" | "closed", …}`). 401 means the token does not open that SID, 404
// that no such account is reachable with it; a suspended or closed account is refused too.
// SignalWire's LaML API answers the same request for a project (signalwire/account-check.ts).
import type { TwilioCredentialsValue } from '../../carrier-accounts/schema.ts';
import type { CarrierAccountCheck } from '../../carrier-accounts/service.ts';
import { accountCheck, type AccountCheckOptions, type CredentialsProbe } from '../account-check.ts';

/** What the check of a carrier with Twilio's REST API reads of an account's credentials. */
export interface CompatAccountKeys {
  label: string;
  /** Where Accounts/{sid}.json is, under /2010-04-01. */
  apiBase: string;
  sid: string;
  token: string;
  /** The credentials' field names, as a refusal names them. */
  sidField: string;
  tokenField: string;
}

/** Twilio's account read, for Twilio and for carriers that copy its API. */
export function compatProbe(k: CompatAccountKeys): CredentialsProbe {
  return {
    carrier: k.label,
    url: `${k.apiBase}/2010-04-01/Accounts/${encodeURIComponent(k.sid)}.json`,
    headers: { authorization: `Basic ${Buffer.from(`${k.sid}:${k.token}`).toString('base64')}` },
    refused: (status, detail) =>
      `body.credentials.${k.tokenField}: ${k.label} refused it for account ${k.sid} (HTTP ${status}${detail})`,
    unknown: (detail) =>
      `body.credentials.${k.sidField}: ${k.label} knows no account ${k.sid} that this token opens (HTTP 404${detail})`,
    unusable: ({ status }) =>
      status === 'suspended' || status === 'closed'
        ? `body.credentials.${k.sidField}: ${k.label} account ${k.sid} is ${status}`
        : undefined,
  };
}

export function twilioAccountCheck(o: AccountCheckOptions): CarrierAccountCheck {
  return accountCheck<TwilioCredentialsValue>(o, (credentials, apiBase) =>
    compatProbe({
      label: 'Twilio',
      apiBase,
      sid: credentials.account_sid,
      token: credentials.auth_token,
      sidField: 'account_sid',
      tokenField: 'auth_token',
    }),
  );
}
