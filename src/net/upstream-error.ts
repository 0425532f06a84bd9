// An upstream's failure answer as one coded error: a request that asks for it (`upstreamErrors`
// on sendRequest) never sees a non-2xx response as an answer; it fails with UpstreamError, holding
// the status and the message the body gave, read to a cap. The model client and the voice and
// recognition endpoints map it to their own public errors. An undici interceptor, composed once
// into the outbound dispatcher, so the body is read (and the connection kept or dropped) before the
// caller sees anything; it is opt-in per request because a tool's error answer is the model's
// content, and a webhook receiver's body is not read for its words. undici's responseError
// interceptor is not used: it reads the whole body, however large, and gives no stable code.
import type { IncomingHttpHeaders } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Dispatcher } from 'undici';
import { z } from 'zod';
import { CodedError } from '../errors.ts';

export const UPSTREAM_ERROR_DEFAULTS = {
  /** How much of a failure answer is read for its message; the connection is dropped past it. */
  bodyBytes: 8_192,
  /** The message is cut here. */
  messageChars: 500,
} as const;

export class UpstreamError extends CodedError<'UPSTREAM_STATUS'> {
  constructor(
    readonly status: number,
    /** What the body said: its message, or its text, capped. */
    readonly detail: string,
  ) {
    super('UPSTREAM_STATUS', `HTTP ${status}: ${detail}`);
  }
}

/** Error answers as OpenAI-compatible servers and this service's own API give them. */
const ErrorBodySchema = z.union([
  z.object({ error: z.object({ message: z.string() }) }),
  z.object({ error: z.string(), details: z.string().optional() }),
  z.object({ message: z.string() }),
]);

/** The message (and details) a JSON error body gives, or null for any other body. */
export function errorBodyMessage(text: string): { message: string; details?: string } | null {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return null;
  }
  const parsed = ErrorBodySchema.safeParse(json);
  if (!parsed.success) return null;
  const body = parsed.data;
  if ('message' in body) return { message: body.message };
  if (typeof body.error === 'string')
    return 'details' in body && body.details ? { message: body.error, details: body.details } : { message: body.error };
  return { message: body.error.message };
}

/** The detail of an UpstreamError: the body's message ("message: details"), else its text, capped. */
export function upstreamDetail(text: string): string {
  const said = errorBodyMessage(text);
  const detail = said ? (said.details ? `${said.message}: ${said.details}` : said.message) : text.trim();
  return detail.slice(0, UPSTREAM_ERROR_DEFAULTS.messageChars);
}

/** The per-request option the interceptor reads: set by sendRequest when the caller asks. */
export interface UpstreamErrorsOption {
  upstreamErrors?: { maxBytes: number };
}

const succeeded = (status: number): boolean => status >= 200 && status <= 299;

/** Withholds a failure answer from the caller, reads its body to the cap, and fails the request with UpstreamError. */
class UpstreamErrorHandler implements Dispatcher.DispatchHandler {
  private status = 0;
  private readonly parts: Buffer[] = [];
  private size = 0;
  private failed = false;

  constructor(
    private readonly next: Dispatcher.DispatchHandler,
    private readonly maxBytes: number,
  ) {}

  onRequestStart(controller: Dispatcher.DispatchController, context: unknown): void {
    this.next.onRequestStart?.(controller, context);
  }

  onRequestUpgrade(
    controller: Dispatcher.DispatchController,
    statusCode: number,
    headers: IncomingHttpHeaders,
    socket: Duplex,
  ): void {
    this.next.onRequestUpgrade?.(controller, statusCode, headers, socket);
  }

  onResponseStart(
    controller: Dispatcher.DispatchController,
    statusCode: number,
    headers: IncomingHttpHeaders,
    statusMessage?: string,
  ): void {
    this.status = statusCode;
    // 1xx are interim: the answer is still to come.
    if (succeeded(statusCode) || statusCode < 200)
      this.next.onResponseStart?.(controller, statusCode, headers, statusMessage);
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (succeeded(this.status)) return this.next.onResponseData?.(controller, chunk);
    if (this.failed) return;
    this.parts.push(chunk);
    this.size += chunk.length;
    // Past the cap the rest is never read: the connection goes, the error is what came so far.
    if (this.size >= this.maxBytes) controller.abort(this.error());
  }

  onResponseEnd(controller: Dispatcher.DispatchController, trailers: IncomingHttpHeaders): void {
    if (succeeded(this.status)) return this.next.onResponseEnd?.(controller, trailers);
    if (this.failed) return;
    this.next.onResponseError?.(controller, this.error());
  }

  onResponseError(controller: Dispatcher.DispatchController, error: Error): void {
    // The caller's abort, a broken socket, or the cap's abort above carrying the UpstreamError.
    this.next.onResponseError?.(controller, error);
  }

  private error(): UpstreamError {
    this.failed = true;
    const body = Buffer.concat(this.parts, this.size).subarray(0, this.maxBytes);
    return new UpstreamError(this.status, upstreamDetail(new TextDecoder('utf-8').decode(body, { stream: true })));
  }
}

/** The interceptor: requests that ask (`upstreamErrors`) fail on a non-2xx answer with UpstreamError. */
export function upstreamErrorInterceptor(): Dispatcher.DispatcherComposeInterceptor {
  return (dispatch) => (options, handler) => {
    const asked = (options as Dispatcher.DispatchOptions & UpstreamErrorsOption).upstreamErrors;
    return dispatch(options, asked ? new UpstreamErrorHandler(handler, asked.maxBytes) : handler);
  };
}
