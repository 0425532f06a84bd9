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
];

export function createLogger(level: string, destination?: DestinationStream): Logger {
  const options = { level, redact: { paths: REDACT_PATHS, censor: '[redacted]' } };
  return destination ? pino(options, destination) : pino(options);
}
