// pino JSON logs with every secret-bearing field redacted before it is written.
import pino, { type DestinationStream, type Logger } from 'pino';

export const REDACT_PATHS = [
  'req.headers.authorization',
  'req.headers["x-twilio-signature"]',
  'headers.authorization',
  'authorization',
  'api_key',
  '*.api_key',
  '*.*.api_key',
  'key',
  'apiKey',
  'access_token',
  '*.access_token',
  'secret',
  '*.secret',
  'token',
  '*.token',
  // Carrier accounts' credentials (carrier-accounts/schema.ts): the object whole, and each secret by its name.
  'credentials',
  '*.credentials',
  '*.*.credentials',
  'auth_token',
  '*.auth_token',
  'api_token',
  '*.api_token',
  'private_key',
  '*.private_key',
  'signature_secret',
  '*.signature_secret',
  'signing_key',
  '*.signing_key',
];

export function createLogger(level: string, destination?: DestinationStream): Logger {
  const options = { level, redact: { paths: REDACT_PATHS, censor: '[redacted]' } };
  return destination ? pino(options, destination) : pino(options);
}
