// Turns anything thrown while serving a request into the one error shape of docs/contract.md.
import type { FastifyError } from 'fastify';
import { hasZodFastifySchemaValidationErrors } from 'fastify-type-provider-zod';
import { ApiError } from '../errors.ts';

interface ZodIssueParams {
  keys?: string[];
}

export function toApiError(error: unknown): ApiError | undefined {
  if (error instanceof ApiError) return error;
  if (hasZodFastifySchemaValidationErrors(error)) {
    const where = (error as { validationContext?: string }).validationContext ?? 'body';
    const problems = error.validation.map((v) => {
      const path = `${where}${v.instancePath === '/' ? '' : v.instancePath.replaceAll('/', '.')}`;
      const keys = (v.params as ZodIssueParams).keys;
      if (v.keyword === 'unrecognized_keys' && keys) return keys.map((k) => `${path}.${k}: unknown key`).join('; ');
      return `${path}: ${v.message}`;
    });
    return new ApiError('BAD_REQUEST', problems.join('; '));
  }
  const fe = error as Partial<FastifyError> & { type?: string };
  switch (fe.code) {
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new ApiError('UNSUPPORTED_MEDIA_TYPE', 'send the body as JSON with Content-Type: application/json');
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new ApiError('BODY_TOO_LARGE', fe.message ?? 'the request body is over the limit');
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new ApiError('MALFORMED_JSON', 'Content-Type is application/json but the body is empty');
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return new ApiError('MALFORMED_JSON', `the body is not valid JSON: ${fe.message ?? ''}`);
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new ApiError('BAD_REQUEST', 'Content-Length does not match the body');
  }
  if (error instanceof SyntaxError && fe.statusCode === 400)
    return new ApiError('MALFORMED_JSON', `the body is not valid JSON: ${error.message}`);
  if (typeof fe.statusCode === 'number' && fe.statusCode >= 400 && fe.statusCode < 500) {
    if (fe.statusCode === 404) return new ApiError('NOT_FOUND', fe.message ?? 'not found');
    if (fe.statusCode === 413) return new ApiError('BODY_TOO_LARGE', fe.message ?? 'too large');
    if (fe.statusCode === 415) return new ApiError('UNSUPPORTED_MEDIA_TYPE', fe.message ?? 'unsupported media type');
    return new ApiError('BAD_REQUEST', fe.message ?? 'bad request');
  }
  return undefined;
}
