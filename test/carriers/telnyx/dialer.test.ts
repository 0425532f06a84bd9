// The Telnyx dialer's warm transfer requests, against a recording HTTP server on loopback: the
// second leg is a TeXML call whose stream carries the call and the leg's secret and whose status
// callback is marked leg=consult; the bridge is Call Control's, naming the second leg; a call of no
// Telnyx account is the next carrier's, or has no warm transfer.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { OwnedCarrierAccount } from '../../../src/carrier-accounts/repository.ts';
import { CarrierApiError } from '../../../src/carriers/carrier-rest.ts';
import type { CarrierCallRepository } from '../../../src/carriers/carrier-calls.ts';
import { NoCarrierDialer } from '../../../src/carriers/carriers.ts';
import { TelnyxAccounts } from '../../../src/carriers/telnyx/accounts.ts';
import { TelnyxDialer } from '../../../src/carriers/telnyx/dialer.ts';
import { NoTransferError } from '../../../src/records/dialer.ts';
import { streamOfTexml } from '../../helpers/telnyx-standin.ts';
import { startServer, type TestServer } from '../../support/http-server.ts';
import { testDispatcher } from '../../support/outbound.ts';

const API_KEY = 'KEYtest';
const CONNECTION = '1234567890';
const CALLER_LEG = 'v3:caller-leg';
const SECOND_LEG = 'v3:second-leg';
const PUBLIC_URL = 'https://voice.example.com';

const account: OwnedCarrierAccount = {
  orgId: 'acme',
  account: {
    carrier_account_id: 'acct_1',
    carrier: 'telnyx',
    name: 'main',
    numbers: ['+14155550100'],
    created_at: 0,
    updated_at: 0,
    credentials: { api_key: API_KEY, public_key: 'pk', connection_id: CONNECTION },
  },
};

/** call_1 went through the account; call_2 through none. */
const carrierCalls: CarrierCallRepository = {
  record: async () => {},
  carrierCallId: async (callId) => (callId === 'call_1' ? CALLER_LEG : undefined),
  callIdOf: async () => undefined,
  carrierAccountOf: async (callId) => (callId === 'call_1' ? 'acct_1' : undefined),
};

let server: TestServer;
/** What the server answers the next request with. */
let answer: { status: number; body: unknown };
let dialer: TelnyxDialer;

beforeAll(async () => {
  server = await startServer((_req, res) => {
    res.writeHead(answer.status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(answer.body));
  });
  dialer = new TelnyxDialer({
    accounts: new TelnyxAccounts({
      accounts: { byNumber: async () => account, find: async (id) => (id === 'acct_1' ? account : undefined) },
      carrierCalls,
    }),
    next: new NoCarrierDialer(),
    apiBase: server.url,
    dispatcher: testDispatcher,
    publicUrl: () => PUBLIC_URL,
    ringTimeoutMs: 20_000,
    carrierCalls,
    clock: { now: () => 0 },
  });
});
afterAll(async () => {
  await server.close();
});
beforeEach(() => {
  server.requests.length = 0;
});

const sentJson = (n: number) => JSON.parse(server.requests[n]!.body) as Record<string, unknown>;

describe('a warm transfer on a Telnyx call', () => {
  it("calls the destination as a TeXML call through the call's account, streaming to /media/telnyx with the call id and the leg's secret, its status marked leg=consult", async () => {
    answer = {
      status: 200,
      body: { call_sid: SECOND_LEG, from: '+14155550100', to: '+14155550177', status: 'queued' },
    };
    const leg = await dialer.consult({
      callId: 'call_1',
      to: '+14155550177',
      from: '+14155550100',
      streamSecret: 'leg-secret',
    });
    expect(leg).toEqual({ carrierCallId: SECOND_LEG });
    expect(server.requests).toHaveLength(1);
    const sent = server.requests[0]!;
    expect(sent.method).toBe('POST');
    expect(sent.url).toBe(`/v2/texml/calls/${CONNECTION}`);
    expect(sent.headers.authorization).toBe(`Bearer ${API_KEY}`);
    const body = sentJson(0);
    expect(body).toMatchObject({
      To: '+14155550177',
      From: '+14155550100',
      StatusCallback: `${PUBLIC_URL}/telephony/telnyx/status?call_id=call_1&leg=consult`,
      StatusCallbackMethod: 'POST',
      StatusCallbackEvent: 'answered completed',
      Timeout: 20,
    });
    expect(streamOfTexml(String(body.Texml))).toEqual({
      url: 'wss://voice.example.com/media/telnyx',
      parameters: { call_id: 'call_1', secret: 'leg-secret' },
    });
  });

  it("bridges the caller's leg with the second leg through Call Control, naming the second leg's call_control_id", async () => {
    answer = { status: 200, body: { data: { result: 'ok' } } };
    await dialer.bridge({ callId: 'call_1', carrierCallId: CALLER_LEG, consultCarrierCallId: SECOND_LEG });
    expect(server.requests).toHaveLength(1);
    expect(decodeURIComponent(server.requests[0]!.url)).toBe(`/v2/calls/${CALLER_LEG}/actions/bridge`);
    expect(server.requests[0]!.headers.authorization).toBe(`Bearer ${API_KEY}`);
    expect(sentJson(0)).toEqual({ call_control_id: SECOND_LEG });
  });

  it("fails with Telnyx's words when it refuses the second leg or the bridge (the caller then stays with the agent)", async () => {
    answer = { status: 422, body: { errors: [{ code: '90018', title: 'Call has already ended' }] } };
    const bridged = dialer.bridge({ callId: 'call_1', carrierCallId: CALLER_LEG, consultCarrierCallId: SECOND_LEG });
    await expect(bridged).rejects.toBeInstanceOf(CarrierApiError);
    await expect(bridged).rejects.toThrow(/HTTP 422 .*90018 Call has already ended/);
    answer = { status: 200, body: { status: 'queued' } };
    await expect(
      dialer.consult({ callId: 'call_1', to: '+14155550177', from: '+14155550100', streamSecret: 's' }),
    ).rejects.toThrow(/no call_sid/);
  });

  it('places no second leg for a call that has no number of its own to call from', async () => {
    await expect(
      dialer.consult({ callId: 'call_1', to: '+14155550177', from: null, streamSecret: 's' }),
    ).rejects.toBeInstanceOf(CarrierApiError);
    expect(server.requests).toHaveLength(0);
  });

  it('leaves a call of no Telnyx account to the next carrier, which here has no warm transfer', async () => {
    await expect(
      dialer.consult({ callId: 'call_2', to: '+14155550177', from: '+14155550100', streamSecret: 's' }),
    ).rejects.toBeInstanceOf(NoTransferError);
    await expect(
      dialer.bridge({ callId: 'call_2', carrierCallId: CALLER_LEG, consultCarrierCallId: SECOND_LEG }),
    ).rejects.toBeInstanceOf(NoTransferError);
    expect(server.requests).toHaveLength(0);
  });
});
