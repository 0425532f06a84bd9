// A Twilio account's credentials are tried before they are stored (carriers/account-check.ts): GET
// /2010-04-01/Accounts/{AccountSid}.json with the SID and auth token as HTTP basic auth, the cheapest
// authenticated request Twilio offers (it reads the account resource, `{"sid", "friendly_name",
// "status": "active" | "suspended" | "closed", …}`). 401 means the token does not open that SID, 404
// that no such account is reachable with it; a suspended or closed account is refused too.
import type { TwilioCredentialsValue } from '../../carrier-accounts/schema.ts';
import type { CarrierAccountCheck } from '../../carrier-accounts/service.ts';
import { accountCheck, type AccountCheckOptions } from '../account-check.ts';

export function twilioAccountCheck(o: AccountCheckOptions): CarrierAccountCheck {
  return accountCheck<TwilioCredentialsValue>(o, ({ account_sid: sid, auth_token: token }, apiBase) => ({
    carrier: 'Twilio',
    url: `${apiBase}/2010-04-01/Accounts/${encodeURIComponent(sid)}.json`,
    headers: { authorization: `Basic ${Buffer.from(`${sid}:${token}`).toString('base64')}` },
    refused: (status, detail) =>
      `body.credentials.auth_token: Twilio refused it for account ${sid} (HTTP ${status}${detail})`,
    unknown: (detail) =>
      `body.credentials.account_sid: Twilio knows no account ${sid} that this auth token opens (HTTP 404${detail})`,
    unusable: ({ status }) =>
      status === 'suspended' || status === 'closed'
        ? `body.credentials.account_sid: Twilio account ${sid} is ${status}`
        : undefined,
  }));
}
