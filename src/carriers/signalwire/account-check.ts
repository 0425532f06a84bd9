// A SignalWire account's credentials are tried before they are stored, as Twilio's are
// (twilio/account-check.ts): its LaML API reads the project as Twilio reads an account — GET
// https://{space_url}/api/laml/2010-04-01/Accounts/{project_id}.json with project_id:api_token as
// basic auth, `{"sid", "friendly_name", "status": "active" | …}`. A 401 names `api_token`, a 404
// `project_id`; a space that does not answer is a 502 (CARRIER_UNREACHABLE): nothing is stored.
import type { CredentialsOf } from '../../carrier-accounts/schema.ts';
import type { CarrierAccountCheck } from '../../carrier-accounts/service.ts';
import type { Dispatcher } from '../../net/http.ts';
import { accountCheck } from '../account-check.ts';
import { compatProbe } from '../twilio/account-check.ts';
import { lamlApiBase } from './accounts.ts';

export function signalwireAccountCheck(o: {
  /** SIGNALWIRE_API_BASE; unset: the account's own space. */
  apiBase: string | undefined;
  dispatcher: Dispatcher;
  timeoutMs?: number;
}): CarrierAccountCheck {
  return accountCheck<CredentialsOf<'signalwire'>>({ ...o, apiBase: o.apiBase ?? '' }, (credentials) =>
    compatProbe({
      label: 'SignalWire',
      apiBase: lamlApiBase(credentials.space_url, o.apiBase),
      sid: credentials.project_id,
      token: credentials.api_token,
      sidField: 'project_id',
      tokenField: 'api_token',
    }),
  );
}
