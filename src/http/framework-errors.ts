// Requests fastify or Node refuse before any route runs (a malformed URL or request line, a path
// parameter past the router's limit, a request that took too long or whose headers are too large)
// still get the one error shape; their defaults answer in a shape of their own.
import type { Socket } from 'node:net';
import { STATUS_CODES } from 'node:http';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError, type ErrorCode } from '../errors.ts';
import { closeAfterAnswer } from './upgrades.ts';

/** The router's limit on one path parameter: the longest id any schema accepts. */
export const MAX_PATH_PARAMETER_LENGTH = 200;

export function answerFrameworkError(error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  const apiError =
    error.code === 'FST_ERR_MAX_PARAM_LENGTH'
      ? new ApiError('BAD_REQUEST', `a path parameter is longer than ${MAX_PATH_PARAMETER_LENGTH} characters`)
      : error.code === 'FST_ERR_BAD_URL'
        ? new ApiError('BAD_REQUEST', 'the URL is malformed (an invalid percent-encoding)')
        : new ApiError('BAD_REQUEST', error.message);
  // No route's hooks run for these: an upgrade request's socket is closed from here.
  closeAfterAnswer(request.raw, reply.raw);
  void reply.code(apiError.status).send(apiError.toBody());
}

/** Node's clientError: answered on the raw socket, which is then closed. */
export function answerClientError(error: Error & { code?: string }, socket: Socket): void {
  // A reset connection has nobody left to answer.
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const [code, details]: [ErrorCode, string] =
    error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
      ? ['REQUEST_TIMEOUT', 'the request did not arrive whole in time']
      : error.code === 'HPE_HEADER_OVERFLOW'
        ? ['HEADERS_TOO_LARGE', 'the request headers are too large']
        : ['BAD_REQUEST', 'the request could not be parsed as HTTP'];
  const apiError = new ApiError(code, details);
  const body = JSON.stringify(apiError.toBody());
  if (socket.writable) {
    socket.write(
      `HTTP/1.1 ${apiError.status} ${STATUS_CODES[apiError.status] ?? ''}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy();
}
