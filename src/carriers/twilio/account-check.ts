// A Twilio account's credentials are tried before they are stored: GET /2010-04-01/Accounts/{AccountSid}.json with
// the SID and auth token as HTTP basic auth, the cheapest authenticated request Twilio offers (it reads the account
// resource, `{"sid", "friendly_name", "status": "active" | "suspended" | "closed", …}`). 401 means the token does not
// open that SID, 404 that no such account is reachable with it; either is a 400 naming the field, and nothing is
// stored. Twilio not answering is a 502: the credentials may be fine. Sent through the outbound layer (net/http.ts)
// to TWILIO_API_BASE, like every request the service makes.
import type { CarrierAccountCheck } from '../../carrier-accounts/service.ts';
import type { TwilioCredentialsValue } from '../../carrier-accounts/schema.ts';
import { ApiError } from '../../errors.ts';
import { readTextCapped, sendRequest, type Dispatcher } from '../../net/http.ts';

export interface TwilioAccountCheckOptions {
  /** TWILIO_API_BASE. */
  apiBase: string;
  dispatcher: Dispatcher;
  timeoutMs?: number;
}

const ANSWER_BYTES = 16 * 1024;

export function twilioAccountCheck(o: TwilioAccountCheckOptions): CarrierAccountCheck {
  return async (given) => {
    const credentials = given as TwilioCredentialsValue;
    const sid = credentials.account_sid;
    const url = `${o.apiBase}/2010-04-01/Accounts/${encodeURIComponent(sid)}.json`;
    let status: number;
    let text: string;
    try {
      const res = await sendRequest(url, {
        method: 'GET',
        headers: {
          authorization: `Basic ${Buffer.from(`${sid}:${credentials.auth_token}`).toString('base64')}`,
          accept: 'application/json',
        },
        dispatcher: o.dispatcher,
        signal: AbortSignal.timeout(o.timeoutMs ?? 10_000),
      });
      status = res.statusCode;
      text = await readTextCapped(res.body, ANSWER_BYTES);
    } catch (error) {
      throw new ApiError(
        'CARRIER_UNREACHABLE',
        `Twilio could not be reached to check the credentials (${(error as Error).message}); nothing was stored, try again`,
      );
    }
    const message = messageOf(text);
    if (status === 401 || status === 403) {
      throw new ApiError(
        'BAD_REQUEST',
        `body.credentials.auth_token: Twilio refused it for account ${sid} (HTTP ${status}${message}); nothing was stored`,
      );
    }
    if (status === 404) {
      throw new ApiError(
        'BAD_REQUEST',
        `body.credentials.account_sid: Twilio knows no account ${sid} that this auth token opens (HTTP 404${message}); nothing was stored`,
      );
    }
    if (status !== 200) {
      throw new ApiError(
        'CARRIER_UNREACHABLE',
        `Twilio answered HTTP ${status}${message} to the credentials check; nothing was stored, try again`,
      );
    }
    const accountStatus = statusOf(text);
    if (accountStatus === 'suspended' || accountStatus === 'closed') {
      throw new ApiError(
        'BAD_REQUEST',
        `body.credentials.account_sid: Twilio account ${sid} is ${accountStatus}; nothing was stored`,
      );
    }
  };
}

function parsed(text: string): Record<string, unknown> {
  try {
    const value: unknown = JSON.parse(text);
    return value && typeof value === 'object' ? (value as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

const messageOf = (text: string): string => {
  const { message } = parsed(text);
  return typeof message === 'string' ? `: ${message.slice(0, 200)}` : '';
};

const statusOf = (text: string): string | undefined => {
  const { status } = parsed(text);
  return typeof status === 'string' ? status : undefined;
};
