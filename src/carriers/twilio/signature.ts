// X-Twilio-Signature: base64 HMAC-SHA1, keyed by the auth token, of the URL Twilio called
// followed by every POST parameter name+value in name order (docs/twilio.md).
import { createHmac, timingSafeEqual } from 'node:crypto';

export type FormParams = Record<string, string | string[]>;

export function twilioSignature(authToken: string, url: string, params: FormParams): string {
  let data = url;
  for (const name of Object.keys(params).sort()) {
    const value = params[name]!;
    const values = Array.isArray(value) ? [...new Set(value)].sort() : [value];
    for (const v of values) data += name + v;
  }
  return createHmac('sha1', authToken).update(data, 'utf8').digest('base64');
}

/** Twilio's own SDK accepts the URL with and without the default port; so do we. */
function urlVariants(url: string): string[] {
  const parsed = new URL(url);
  const variants = new Set([url]);
  const defaultPort = parsed.protocol === 'https:' ? '443' : '80';
  if (parsed.port === '') {
    variants.add(url.replace(parsed.host, `${parsed.hostname}:${defaultPort}`));
  } else if (parsed.port === defaultPort) {
    variants.add(url.replace(`:${defaultPort}`, ''));
  }
  return [...variants];
}

export function isValidTwilioSignature(
  authToken: string,
  url: string,
  params: FormParams,
  signature: string | undefined,
): boolean {
  if (!signature) return false;
  const presented = Buffer.from(signature);
  let valid = false;
  for (const candidate of urlVariants(url)) {
    const expected = Buffer.from(twilioSignature(authToken, candidate, params));
    if (expected.length === presented.length && timingSafeEqual(expected, presented)) valid = true;
  }
  return valid;
}
