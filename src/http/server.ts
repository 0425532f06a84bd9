// The HTTP layer: fastify with zod validation, bearer auth per organization, one error shape.
// Routes stay thin: validate, call a service, shape the reply.
import type { IncomingMessage, ServerOptions } from 'node:http';
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyRequest } from 'fastify';
import { validatorCompiler } from 'fastify-type-provider-zod';
import type { Logger } from 'pino';
import type { ApiKeyAuthenticator } from '../auth/api-keys.ts';
import type { Clock } from '../clock.ts';
import { ApiError } from '../errors.ts';
import { toApiError } from './errors.ts';
import { keepReceivedJson } from './forward.ts';
import { answerClientError, answerFrameworkError, MAX_PATH_PARAMETER_LENGTH } from './framework-errors.ts';
import { MAX_JSON_DEPTH, tooDeep } from './json-depth.ts';
import { OpenApiRegistry, type RouteDoc } from './openapi.ts';
import type { RateWindowStore } from '../store/rate-windows.ts';
import { AuthFailureLimiter, RateLimiter } from './rate-limit.ts';

declare module 'fastify' {
  interface FastifyRequest {
    /** Organization of the request's API key; empty on public routes. */
    orgId: string;
  }
  interface FastifyContextConfig {
    doc?: RouteDoc;
  }
}

export interface HttpOptions {
  logger: Logger;
  auth: ApiKeyAuthenticator;
  clock: Clock;
  bodyLimitBytes: number;
  rateLimitPerMinute: number;
  /** Where requests are counted per organization and minute. */
  rateWindows: RateWindowStore;
  requestTimeoutMs: number;
  trustProxy: string[] | undefined;
  /**
   * Whether a request was passed on by the node it reached first, which counted it against its
   * organization's limit already (forward.ts): counted again here, a request about a call on
   * another node would use up the limit twice as fast as one that landed on it.
   */
  countedByPeer?: (request: FastifyRequest) => boolean;
}

export interface HttpServer {
  app: FastifyInstance;
  openapi: OpenApiRegistry;
  /** From now on every request but health checks gets 503. */
  beginShutdown(): void;
  readonly shuttingDown: boolean;
}

/** How long and how much of an oversized body is read and dropped before its 413 is sent. */
export const BODY_DRAIN_LIMITS = { ms: 5_000, bytes: 64 * 1024 * 1024 } as const;

/** Resolves once the request's body has all arrived (read and dropped), the request closed, or a limit is reached. */
export function dropRestOfBody(request: IncomingMessage, limits: { ms: number; bytes: number }): Promise<void> {
  if (request.complete || request.destroyed) return Promise.resolve();
  return new Promise((resolve) => {
    let bytes = 0;
    const done = () => {
      clearTimeout(timer);
      request.off('data', count);
      request.off('end', done);
      request.off('close', done);
      resolve();
    };
    const count = (chunk: Buffer) => {
      bytes += chunk.length;
      if (bytes > limits.bytes) done();
    };
    const timer = setTimeout(done, limits.ms);
    request.on('data', count);
    request.once('end', done);
    request.once('close', done);
    request.resume();
  });
}

export function createHttpServer(options: HttpOptions): HttpServer {
  const app: FastifyInstance = Fastify({
    loggerInstance: options.logger as FastifyBaseLogger,
    bodyLimit: options.bodyLimitBytes,
    // Ids are ours to generate and the generated request id is enough for log correlation.
    requestIdHeader: false,
    // Behind a load balancer the client's address (for auth throttling and logs) is in X-Forwarded-For.
    trustProxy: options.trustProxy ?? false,
    // A body trickled a byte at a time must not hold a connection for minutes. Node honours the
    // timeout only when given at construction, and checks it on an interval (30 s by default).
    requestTimeout: options.requestTimeoutMs,
    http: {
      requestTimeout: options.requestTimeoutMs,
      connectionsCheckingInterval: Math.min(1_000, options.requestTimeoutMs / 4),
    } as ServerOptions,
    routerOptions: { maxParamLength: MAX_PATH_PARAMETER_LENGTH },
    frameworkErrors: answerFrameworkError,
    clientErrorHandler: answerClientError,
  });
  // The API speaks JSON only; carrier webhooks add their form parser in their own scope.
  app.removeContentTypeParser('text/plain');
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    const deep = tooDeep(body as string);
    if (deep)
      return done(new ApiError('BAD_REQUEST', `${deep}: nested deeper than ${MAX_JSON_DEPTH} levels`), undefined);
    keepReceivedJson(request, body as string);
    void parseJson(request, body as string, done);
  });
  app.setValidatorCompiler(validatorCompiler);
  // Response schemas exist for the OpenAPI document; replies are plain JSON.
  app.setSerializerCompiler(() => (data) => JSON.stringify(data));

  const openapi = new OpenApiRegistry();
  app.addHook('onRoute', openapi.collect);

  const limiter = new RateLimiter(options.rateLimitPerMinute, options.clock, options.rateWindows);
  const authFailures = new AuthFailureLimiter(options.clock);
  let shuttingDown = false;

  app.decorateRequest('orgId', '');
  app.addHook('onRequest', async (request) => {
    const isPublic = request.is404 || request.routeOptions.config.doc?.public === true;
    if (shuttingDown && !request.url.startsWith('/healthz')) {
      throw new ApiError(
        'SHUTTING_DOWN',
        'the service is shutting down; retry against another instance or after restart',
        {
          headers: { 'Retry-After': '5' },
        },
      );
    }
    if (isPublic) return;
    authFailures.check(request.ip);
    try {
      request.orgId = options.auth.authenticate(request.headers.authorization);
    } catch (error) {
      authFailures.failed(request.ip);
      throw error;
    }
    if (options.countedByPeer?.(request)) return;
    await limiter.take(request.orgId);
  });

  // A bodiless POST means "no options": the schema then names any required field it lacks.
  app.addHook('preValidation', async (request) => {
    if (request.body === undefined || request.body === null) request.body = {};
  });

  app.setErrorHandler(async (error, request, reply) => {
    const apiError = toApiError(error);
    if (!apiError) {
      request.log.error({ err: error }, 'unexpected error');
      const internal = new ApiError('INTERNAL', 'an unexpected error occurred; it has been logged');
      return reply.code(internal.status).send(internal.toBody());
    }
    if (apiError.status >= 500) request.log.error({ err: error }, apiError.message);
    if (apiError.code === 'BODY_TOO_LARGE') {
      // The connection is closed after this answer. Closed while the client still sends, it would
      // be reset, and a client not reading yet would lose the answer with it: the rest of the body
      // is read and dropped first (within bounds), so the close comes after all it sent.
      await dropRestOfBody(request.raw, BODY_DRAIN_LIMITS);
      reply.header('connection', 'close');
    }
    return reply.code(apiError.status).headers(apiError.headers).send(apiError.toBody());
  });

  app.setNotFoundHandler(async (request, reply) => {
    const error = new ApiError('NOT_FOUND', `no route ${request.method} ${request.url.split('?')[0]}`);
    return reply.code(404).send(error.toBody());
  });

  return {
    app,
    openapi,
    beginShutdown: () => {
      shuttingDown = true;
    },
    get shuttingDown() {
      return shuttingDown;
    },
  };
}
