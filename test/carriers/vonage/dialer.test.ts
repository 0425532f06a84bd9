// The Vonage dialer's warm transfer against a recording Voice API: the second leg is a call create whose NCCO
// connects it to the media WebSocket with the leg's secret and whose event_url says leg=consult; the bridge transfers
// the leg, then the caller's call (by the uuid recorded for it), to one conversation NCCO named after the call; a
// call of no Vonage account is the next carrier's to transfer, or cannot be.
import { generateKeyPairSync } from 'node:crypto';
import { decodeJwt } from 'jose';
import { describe, expect, it } from 'vitest';
import { VonageAccounts } from '../../../src/carriers/vonage/accounts.ts';
import { VonageDialer } from '../../../src/carriers/vonage/dialer.ts';
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
const account = accountHolding('vonage', NUMBER, {
  application_id: 'app-1',
  private_key: generateKeyPairSync('rsa', { modulusLength: 2048 })
    .privateKey.export({ format: 'pem', type: 'pkcs8' })
    .toString(),
  signature_secret: 'sig',
});

const carrierApi = carrierApiForTests((request) =>
  request.method === 'POST'
    ? { status: 201, body: { uuid: 'desk-uuid', status: 'started', direction: 'outbound' } }
    : { status: 204 },
);

/** A Vonage dialer whose call `call_1` went through the organization's account (its uuid caller-uuid). */
async function dialer(next: Dialer = transferringNext([])) {
  const carrierCalls = carrierCallsInMemory();
  await carrierCalls.record('call_1', 'vonage', 'caller-uuid', 0, account.carrier_account_id);
  return new VonageDialer({
    accounts: new VonageAccounts({ accounts: oneAccount('acme', account), carrierCalls }),
    next,
    apiBase: carrierApi().url,
    dispatcher: testDispatcher,
    publicUrl: () => PUBLIC,
    ringTimeoutMs: 20_000,
    carrierCalls,
    clock: { now: () => 1_700_000_000_000 },
    randomId: () => 'jti-1',
  });
}

describe('Vonage warm transfer', () => {
  it("places the second leg as a call create connected to the media WebSocket with the leg's secret, marked leg=consult", async () => {
    const vonage = await dialer();
    expect(await vonage.consult({ callId: 'call_1', to: DESK, from: NUMBER, streamSecret: 's3cret' })).toEqual({
      carrierCallId: 'desk-uuid',
    });
    const [create] = carrierApi().requests;
    expect(carrierApi().requests).toHaveLength(1);
    expect(create).toMatchObject({ method: 'POST', path: '/v1/calls' });
    expect(decodeJwt(create!.authorization!.replace(/^Bearer /, ''))).toMatchObject({ application_id: 'app-1' });
    expect(create!.body).toEqual({
      to: [{ type: 'phone', number: '14155550177' }],
      from: { type: 'phone', number: '14155550100' },
      ncco: [
        {
          action: 'connect',
          eventUrl: [`${PUBLIC}/telephony/vonage/event?call_id=call_1`],
          endpoint: [
            {
              type: 'websocket',
              uri: 'wss://voice.example.com/media/vonage',
              'content-type': 'audio/l16;rate=16000',
              headers: { call_id: 'call_1', secret: 's3cret' },
            },
          ],
        },
      ],
      event_url: [`${PUBLIC}/telephony/vonage/event?call_id=call_1&leg=consult`],
      event_method: 'POST',
      ringing_timer: 20,
    });
  });

  it("a call with no number of its own places the leg from one of the application's (random_from_number)", async () => {
    const vonage = await dialer();
    await vonage.consult({ callId: 'call_1', to: DESK, from: null, streamSecret: 's' });
    expect(carrierApi().requests[0]!.body).toMatchObject({ random_from_number: true });
    expect(carrierApi().requests[0]!.body).not.toHaveProperty('from');
  });

  it("bridges by transferring the second leg, then the caller's call, to the call's conversation", async () => {
    const vonage = await dialer();
    // The stream opened before the create's answer was read: it named the call_id, and the recorded uuid is used.
    await vonage.bridge({ callId: 'call_1', carrierCallId: 'call_1', consultCarrierCallId: 'desk-uuid' });
    const transfer = {
      action: 'transfer',
      destination: {
        type: 'ncco',
        ncco: [{ action: 'conversation', name: 'transfer-call_1', startOnEnter: true, endOnExit: true }],
      },
    };
    expect(carrierApi().requests.map((r) => [r.method, r.path, r.body])).toEqual([
      ['PUT', '/v1/calls/desk-uuid', transfer],
      ['PUT', '/v1/calls/caller-uuid', transfer],
    ]);
  });

  it('a bridge Vonage refuses fails with its error after the first leg', async () => {
    carrierApi().answer = () => ({
      status: 404,
      body: { title: 'Not Found', detail: 'The call was not found or has ended.' },
    });
    const vonage = await dialer();
    await expect(
      vonage.bridge({ callId: 'call_1', carrierCallId: 'caller-uuid', consultCarrierCallId: 'desk-uuid' }),
    ).rejects.toThrow(/HTTP 404 to a transfer's bridge: Not Found: The call was not found/);
    expect(carrierApi().requests).toHaveLength(1);
  });

  it('a call of no Vonage account is the next carrier’s to warm-transfer, or cannot be where it has none', async () => {
    const asked: string[] = [];
    const vonage = await dialer(transferringNext(asked));
    const request = { callId: 'call_elsewhere', to: DESK, from: NUMBER, streamSecret: 's' };
    expect(await vonage.consult(request)).toEqual({ carrierCallId: 'next-leg' });
    await vonage.bridge({ callId: 'call_elsewhere', carrierCallId: 'x', consultCarrierCallId: 'next-leg' });
    expect(asked).toEqual(['consult call_elsewhere', 'bridge call_elsewhere']);
    const alone = await dialer({ name: 'none', showsCallerId: () => false, dial: transferringNext([]).dial });
    await expect(alone.consult(request)).rejects.toBeInstanceOf(NoTransferError);
    expect(carrierApi().requests).toEqual([]);
  });
});
