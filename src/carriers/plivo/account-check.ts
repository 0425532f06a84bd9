// A Plivo account's credentials are tried before they are stored (carriers/account-check.ts): GET
// /v1/Account/{auth_id}/ with auth_id:auth_token as HTTP basic auth, the account's own details
// (`{"account_type", "auth_id", "cash_credits", …}`), the cheapest authenticated request Plivo
// offers. Plivo answers 401 `{"api_id", "error": "Authentication credentials invalid"}` to a pair it
// does not accept, and 404 to an Auth ID it does not know.
import type { CredentialsOf } from '../../carrier-accounts/schema.ts';
import type { CarrierAccountCheck } from '../../carrier-accounts/service.ts';
import { accountCheck, type AccountCheckOptions } from '../account-check.ts';

export function plivoAccountCheck(o: AccountCheckOptions): CarrierAccountCheck {
  return accountCheck<CredentialsOf<'plivo'>>(o, ({ auth_id: id, auth_token: token }, apiBase) => ({
    carrier: 'Plivo',
    url: `${apiBase}/v1/Account/${encodeURIComponent(id)}/`,
    headers: { authorization: `Basic ${Buffer.from(`${id}:${token}`).toString('base64')}` },
    refused: (status, detail) =>
      `body.credentials.auth_token: Plivo refused it for Auth ID ${id} (HTTP ${status}${detail})`,
    unknown: (detail) => `body.credentials.auth_id: Plivo knows no account ${id} (HTTP 404${detail})`,
  }));
}
