// The Plivo dialer's warm transfer against a recording REST API: the second leg is a call create whose answer and
// hangup URLs name the call and say leg=consult (the answer URL with the leg's stream secret); the bridge moves the
// leg (by the CallUUID its answer URL brought) and then the caller's call, each with the Transfer API, to the call's
// conference; a call of no Plivo account is the next carrier's to transfer, or cannot be.
import { describe, expect, it } from 'vitest';
import { CarrierApiError } from '../../../src/carriers/carrier-rest.ts';
import { PlivoAccounts } from '../../../src/carriers/plivo/accounts.ts';
import { PlivoConsultLegs } from '../../../src/carriers/plivo/consult-legs.ts';
import { PlivoDialer } from '../../../src/carriers/plivo/dialer.ts';
import { NoTransferError, type Dialer } from '../../../src/records/dialer.ts';
import {
  accountHolding,
  carrierApiForTests,
  carrierCallsInMemory,
  oneAccount,
  transferringNext,
} from '../../helpers/carrier-api.ts';
import { testDispatcher } from '../../support/outbound.ts';

const NUMBER = '+14155550100';
const DESK = '+14155550177';
const PUBLIC = 'https://voice.example.com';
const account = accountHolding('plivo', NUMBER, { auth_id: 'MAPLIVOAUTHID', auth_token: 'plivo-token' });
const BASIC = `Basic ${Buffer.from('MAPLIVOAUTHID:plivo-token').toString('base64')}`;

const carrierApi = carrierApiForTests((request) =>
  request.path.endsWith('/Call/') && request.method === 'POST'
    ? { status: 201, body: { message: 'call fired', request_uuid: 'req-desk', api_id: 'a1' } }
    : { status: 202, body: { message: 'call transferred', api_id: 'a2' } },
);

/** A Plivo dialer whose call `call_1` went through the organization's account (its CallUUID caller-uuid). */
async function dialer(next: Dialer = transferringNext([])) {
  const carrierCalls = carrierCallsInMemory();
  await carrierCalls.record('call_1', 'plivo', 'caller-uuid', 0, account.carrier_account_id);
  const consultLegs = new PlivoConsultLegs();
  const plivo = new PlivoDialer({
    accounts: new PlivoAccounts(oneAccount('acme', account), carrierCalls),
    next,
    apiBase: carrierApi().url,
    dispatcher: testDispatcher,
    publicUrl: () => PUBLIC,
    ringTimeoutMs: 20_000,
    carrierCalls,
    clock: { now: () => 0 },
    consultLegs,
  });
  return { plivo, consultLegs, carrierCalls };
}

describe('Plivo warm transfer', () => {
  it("places the second leg as a call create streamed back with the leg's secret, marked leg=consult", async () => {
    const { plivo } = await dialer();
    const leg = await plivo.consult({ callId: 'call_1', to: DESK, from: NUMBER, streamSecret: 's3cret' });
    expect(leg).toEqual({ carrierCallId: 'req-desk' });
    expect(carrierApi().requests).toEqual([
      {
        method: 'POST',
        path: '/v1/Account/MAPLIVOAUTHID/Call/',
        authorization: BASIC,
        body: {
          from: '14155550100',
          to: '14155550177',
          answer_url: `${PUBLIC}/telephony/plivo/answer?call_id=call_1&secret=s3cret&leg=consult`,
          answer_method: 'POST',
          hangup_url: `${PUBLIC}/telephony/plivo/status?call_id=call_1&leg=consult`,
          hangup_method: 'POST',
          ring_timeout: 20,
        },
      },
    ]);
  });

  it('a second leg Plivo refuses fails the consult with its error, and places nothing else', async () => {
    carrierApi().answer = () => ({ status: 400, body: { api_id: 'a3', error: 'invalid to' } });
    const { plivo } = await dialer();
    await expect(plivo.consult({ callId: 'call_1', to: DESK, from: NUMBER, streamSecret: 's' })).rejects.toThrow(
      /HTTP 400 to a transfer's call: invalid to/,
    );
    expect(carrierApi().requests).toHaveLength(1);
  });

  it("bridges by moving the answered leg, then the caller's call, to the call's conference", async () => {
    const { plivo, consultLegs } = await dialer();
    consultLegs.answered('req-desk', 'desk-uuid');
    await plivo.bridge({ callId: 'call_1', carrierCallId: 'caller-uuid', consultCarrierCallId: 'req-desk' });
    const move = { legs: 'aleg', aleg_url: `${PUBLIC}/telephony/plivo/conference?call_id=call_1`, aleg_method: 'POST' };
    expect(carrierApi().requests.map((r) => [r.method, r.path, r.body])).toEqual([
      ['POST', '/v1/Account/MAPLIVOAUTHID/Call/desk-uuid/', move],
      ['POST', '/v1/Account/MAPLIVOAUTHID/Call/caller-uuid/', move],
    ]);
  });

  it('a leg whose answer URL never came is not bridged: nothing is sent', async () => {
    const { plivo } = await dialer();
    await expect(
      plivo.bridge({ callId: 'call_1', carrierCallId: 'caller-uuid', consultCarrierCallId: 'req-desk' }),
    ).rejects.toBeInstanceOf(CarrierApiError);
    expect(carrierApi().requests).toEqual([]);
  });

  it('a call of no Plivo account is the next carrier’s to warm-transfer, or cannot be where it has none', async () => {
    const asked: string[] = [];
    const { plivo } = await dialer(transferringNext(asked));
    const request = { callId: 'call_elsewhere', to: DESK, from: NUMBER, streamSecret: 's' };
    expect(await plivo.consult(request)).toEqual({ carrierCallId: 'next-leg' });
    await plivo.bridge({ callId: 'call_elsewhere', carrierCallId: 'x', consultCarrierCallId: 'next-leg' });
    expect(asked).toEqual(['consult call_elsewhere', 'bridge call_elsewhere']);
    const alone = (await dialer({ name: 'none', showsCallerId: () => false, dial: transferringNext([]).dial })).plivo;
    await expect(alone.consult(request)).rejects.toBeInstanceOf(NoTransferError);
    expect(carrierApi().requests).toEqual([]);
  });
});
