// A fetch function for a library that takes one instead of making its own requests (the MCP
// client's transports, tools/mcp/): every request it sends goes through the dispatcher it is given,
// one of OutboundHttp's, so the egress policy holds for it as for sendRequest. A redirect is handed
// back, not followed: a library that follows one sends the next request through here again. A
// response body longer than the cap errors where it passes the cap rather than being read on: a
// server cannot make the service hold an answer of any size.
import {
  fetch as undiciFetch,
  Response as UndiciResponse,
  type Dispatcher,
  type RequestInit as UndiciInit,
} from 'undici';
import { CodedError } from '../errors.ts';

/** The shape libraries take (web fetch): the global Request/Response types, served by undici's fetch. */
export type FetchFunction = (url: string | URL, init?: RequestInit) => Promise<Response>;

export interface FetchThroughOptions {
  /** A response body past this many bytes fails the read. */
  maxBodyBytes: number;
}

export class ResponseTooLargeError extends CodedError<'RESPONSE_TOO_LARGE'> {
  constructor(max: number) {
    super('RESPONSE_TOO_LARGE', `response body over ${max} bytes`);
  }
}

/** A body that errors once more than `max` bytes have passed. */
function cappedBody(body: ReadableStream<Uint8Array>, max: number): ReadableStream<Uint8Array> {
  let seen = 0;
  return body.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        seen += chunk.byteLength;
        if (seen > max) controller.error(new ResponseTooLargeError(max));
        else controller.enqueue(chunk);
      },
    }),
  );
}

/** fetch, through `dispatcher` only (never a default pool), with response bodies capped. */
export function fetchThrough(dispatcher: Dispatcher, options: FetchThroughOptions): FetchFunction {
  return async (url, init) => {
    // The global and the package's RequestInit differ only in their type declarations: one undici underneath.
    // Never followed here: a library that follows a redirect sends the next request through this function again.
    const response = await undiciFetch(url, { ...(init as UndiciInit | undefined), redirect: 'manual', dispatcher });
    if (response.body === null) return response as unknown as Response;
    const capped = new UndiciResponse(cappedBody(response.body as ReadableStream<Uint8Array>, options.maxBodyBytes), {
      status: response.status,
      statusText: response.statusText,
      headers: response.headers,
    });
    return capped as unknown as Response;
  };
}
