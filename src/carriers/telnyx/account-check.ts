// A Telnyx account's credentials are tried before they are stored (carriers/account-check.ts): GET
// /v2/texml_applications/{connection_id} with the API key as a bearer token, sent with Telnyx's SDK
// through the outbound layer (rest.ts), which proves both at once (the key opens the account; the
// TeXML application, whose id is the connection id calls are placed on, is the account's). Telnyx
// answers `{"data": {"id", "friendly_name", "active", …}}`; 401 is a key it refuses (`{"errors":
// [{"code": "10009", "title": "Authentication failed", …}]}`), 404 an application it does not know.
// The ed25519 public key is checked by its schema (32 bytes), not here: Telnyx offers no request
// that reads it back.
import type { CredentialsOf } from '../../carrier-accounts/schema.ts';
import type { CarrierAccountCheck } from '../../carrier-accounts/service.ts';
import { accountCheck, type AccountCheckOptions } from '../account-check.ts';
import { telnyxAnswer, telnyxClients } from './rest.ts';

export function telnyxAccountCheck(o: AccountCheckOptions): CarrierAccountCheck {
  // A credentials check reads a short answer, as every carrier's does (carriers/account-check.ts).
  const client = telnyxClients({ apiBase: o.apiBase, dispatcher: o.dispatcher, answerBytes: 16 * 1024 });
  return accountCheck<CredentialsOf<'telnyx'>>(o, ({ api_key: key, connection_id: id }) => ({
    carrier: 'Telnyx',
    send: (timeout) => telnyxAnswer(client(key).texmlApplications.retrieve(id, { timeout })),
    refused: (status, detail) => `body.credentials.api_key: Telnyx refused it (HTTP ${status}${detail})`,
    unknown: (detail) =>
      `body.credentials.connection_id: Telnyx knows no TeXML application ${id} on this account (HTTP 404${detail})`,
  }));
}
