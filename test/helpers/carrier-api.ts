// What a dialer's unit tests run it against: a carrier REST API on 127.0.0.1 that records every request (method,
// path, JSON body, Authorization) and answers as the test says; one organization's carrier account holding a number;
// and the carrier call ids the dialer records, in memory, as the store keeps them.
import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, beforeEach } from 'vitest';
import type { AddressInfo } from 'node:net';
import type { CarrierAccount } from '../../src/carrier-accounts/schema.ts';
import type { CarrierCallRepository } from '../../src/carriers/carrier-calls.ts';
import type { CarrierAccountLookup } from '../../src/carriers/carrier.ts';
import type { ConsultRequest, Dialer, TransferRequest } from '../../src/records/dialer.ts';

export interface CarrierApiRequest {
  method: string;
  path: string;
  body: Record<string, unknown>;
  authorization: string | undefined;
}

export type CarrierApiAnswer = { status: number; body?: unknown };

export class CarrierApi {
  readonly requests: CarrierApiRequest[] = [];
  url = '';
  private server: Server | undefined;

  /** `answer`: what the API says to each request (by default 204 and nothing). */
  constructor(public answer: (request: CarrierApiRequest) => CarrierApiAnswer = () => ({ status: 204 })) {}

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      let raw = '';
      req.on('data', (chunk: Buffer) => (raw += chunk.toString()));
      req.on('end', () => {
        const request: CarrierApiRequest = {
          method: req.method ?? '',
          path: req.url ?? '',
          body: raw === '' ? {} : (JSON.parse(raw) as Record<string, unknown>),
          authorization: req.headers.authorization,
        };
        this.requests.push(request);
        const { status, body } = this.answer(request);
        res.writeHead(status, body === undefined ? {} : { 'content-type': 'application/json' });
        res.end(body === undefined ? undefined : JSON.stringify(body));
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  async close(): Promise<void> {
    await new Promise((resolve) => this.server?.close(resolve));
  }
}

/**
 * A started CarrierApi for the file's tests: its requests cleared, and its answers set back to `answer`, before each.
 */
export function carrierApiForTests(answer: CarrierApi['answer']): () => CarrierApi {
  const api = new CarrierApi(answer);
  beforeAll(() => api.start());
  afterAll(() => api.close());
  beforeEach(() => {
    api.requests.length = 0;
    api.answer = answer;
  });
  return () => api;
}

/** An organization's account at `carrier` holding `number`, with `credentials`. */
export function accountHolding(
  carrier: CarrierAccount['carrier'],
  number: string,
  credentials: Record<string, string>,
): CarrierAccount {
  return {
    carrier_account_id: `acct_${carrier}`,
    carrier,
    name: 'main line',
    numbers: [number],
    created_at: 0,
    updated_at: 0,
    credentials: credentials as CarrierAccount['credentials'],
  };
}

/** The lookup of one organization's `account`, which holds its numbers. */
export function oneAccount(orgId: string, account: CarrierAccount): CarrierAccountLookup {
  const owned = { orgId, account };
  return {
    byNumber: async (number) => (account.numbers.includes(number) ? owned : undefined),
    find: async (id) => (id === account.carrier_account_id ? owned : undefined),
  };
}

/** The carrier call ids (and accounts) of calls, in memory. */
export function carrierCallsInMemory(): CarrierCallRepository {
  const calls = new Map<string, { carrier: string; id: string; accountId: string | undefined }>();
  return {
    record: async (callId, carrier, id, _at, accountId) => void calls.set(callId, { carrier, id, accountId }),
    carrierCallId: async (callId) => calls.get(callId)?.id,
    callIdOf: async (carrier, id) => [...calls].find(([, call]) => call.carrier === carrier && call.id === id)?.[0],
    carrierAccountOf: async (callId) => calls.get(callId)?.accountId,
  };
}

/** A carrier after the one under test that takes transfers and warm transfers, and lists what it was asked. */
export function transferringNext(asked: string[]): Dialer {
  return {
    name: 'next',
    showsCallerId: () => false,
    dial: async () => ({ status: 'failed', reason: 'dial_failed', message: 'not here' }),
    transfer: async (request: TransferRequest) => void asked.push(`transfer ${request.callId}`),
    consult: async (request: ConsultRequest) => {
      asked.push(`consult ${request.callId}`);
      return { carrierCallId: 'next-leg' };
    },
    bridge: async (request) => void asked.push(`bridge ${request.callId}`),
  };
}
