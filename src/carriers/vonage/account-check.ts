// A Vonage account's credentials are tried before they are stored (carriers/account-check.ts): GET
// /v1/calls?page_size=1 with a token the Voice application signs with its private key, the cheapest
// request that proves the pair (Vonage answers `{"count", "page_size", "_embedded": {"calls": […]}}`,
// or 401 `{"title": "Unauthorized", "detail": …}` for a key or application id it does not accept). A
// private key that is not a PEM key Node can read is refused before anything is sent. The signature
// secret signs Vonage's webhooks and cannot be read back: a wrong one shows as 403 on the first.
import { createPrivateKey, randomUUID, type KeyObject } from 'node:crypto';
import type { CredentialsOf } from '../../carrier-accounts/schema.ts';
import type { CarrierAccountCheck } from '../../carrier-accounts/service.ts';
import { ApiError } from '../../errors.ts';
import { accountCheck, type AccountCheckOptions } from '../account-check.ts';
import { applicationToken } from './token.ts';

export function vonageAccountCheck(o: AccountCheckOptions & { now?: () => number }): CarrierAccountCheck {
  return accountCheck<CredentialsOf<'vonage'>>(o, async (credentials, apiBase) => {
    let key: KeyObject;
    try {
      key = createPrivateKey(credentials.private_key);
    } catch (error) {
      throw new ApiError(
        'BAD_REQUEST',
        `body.credentials.private_key: not a private key in PEM (${(error as Error).message}); nothing was stored`,
      );
    }
    const token = await applicationToken(credentials.application_id, key, (o.now ?? Date.now)(), randomUUID());
    return {
      carrier: 'Vonage',
      url: `${apiBase}/v1/calls?page_size=1`,
      headers: { authorization: `Bearer ${token}` },
      refused: (status, detail) =>
        `body.credentials.private_key: Vonage refused the token it signed for application ${credentials.application_id} (HTTP ${status}${detail})`,
      unknown: (detail) =>
        `body.credentials.application_id: Vonage knows no application ${credentials.application_id} (HTTP 404${detail})`,
    };
  });
}
