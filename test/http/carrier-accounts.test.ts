// Carrier accounts through the API on the real service, with Twilio's REST stand-in as TWILIO_API_BASE: created,
// read, changed, deleted and listed within one organization; the credentials go in and never come out (responses,
// logs) and are sealed at rest; Twilio credentials the stand-in refuses are a 400 naming the field and nothing is
// kept; a number belongs to one organization whether an agent or an account holds it; a call to a number on an
// organization's Twilio account is signed with that account's token; an account a call is going through is not
// deleted.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { CarrierAccountResponse, ListCarrierAccountsResponse } from '../../src/carrier-accounts/schema.ts';
import { CallRecordSchema } from '../../src/records/record.ts';
import { loadOrCreateSecretsKey, SecretBox } from '../../src/secrets/sealed.ts';
import { voiceWebhook } from '../helpers/phone.ts';
import { errorOf, startTestService, TEST_TWILIO_TOKEN, type TestService } from '../helpers/service.ts';
import { TwilioStandIn } from '../helpers/twilio-standin.ts';

let twilio: TwilioStandIn;
let t: TestService;
beforeAll(async () => {
  twilio = await new TwilioStandIn().start();
  t = await startTestService({ TWILIO_API_BASE: twilio.url, STREAM_CONNECT_TIMEOUT_MS: '1500' });
}, 60_000);
afterAll(async () => {
  await t?.stop();
  await twilio?.close();
});

let numbers = 0;
/** A number no test has used yet. */
const fresh = () => `+1555020${String(++numbers).padStart(4, '0')}`;

const OTHER_CARRIERS = {
  telnyx: {
    api_key: 'KEY0123456789ABCDEF_telnyx-secret-1',
    public_key: Buffer.alloc(32, 7).toString('base64'),
    connection_id: '1494404757140276705',
  },
  vonage: {
    application_id: 'aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee',
    private_key: '-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANvonage-secret-2\n-----END PRIVATE KEY-----\n',
    signature_secret: 'vonage-signature-secret-3',
  },
  plivo: { auth_id: 'MAXXXXXXXXXXXXXXXXXX', auth_token: 'plivo-auth-token-secret-4' },
  signalwire: {
    space_url: 'example.signalwire.com',
    project_id: '11111111-2222-4333-8444-555555555555',
    api_token: 'PTsignalwire-api-token-5',
    signing_key: 'PSKsignalwire-signing-key-6',
  },
} as const;

async function create(body: Record<string, unknown>, org = 'acme') {
  const res = await t.request('POST', '/v2/carrier-accounts', { body, key: t.keyOf(org) });
  expect(res.status, res.text).toBe(201);
  return CarrierAccountResponse.strict().parse(res.body);
}

const twilioAccount = (numbers: string[], keys = twilio.addAccount()) => ({
  carrier: 'twilio',
  name: 'main line',
  numbers,
  credentials: { account_sid: keys.accountSid, auth_token: keys.authToken },
});

describe('carrier accounts: create, read, change, delete', () => {
  it('creates a Twilio account with 201 and an id after Twilio opened it, and never returns or logs its credentials', async () => {
    const keys = twilio.addAccount();
    const number = fresh();
    const res = await t.request('POST', '/v2/carrier-accounts', { body: twilioAccount([number], keys) });
    expect(res.status, res.text).toBe(201);
    const account = CarrierAccountResponse.strict().parse(res.body);
    expect(account.carrier_account_id).toMatch(/^cacct_[0-9a-f]{32}$/);
    expect(account).toMatchObject({ carrier: 'twilio', name: 'main line', numbers: [number] });
    const id = account.carrier_account_id;
    const read = await t.request('GET', `/v2/carrier-accounts/${id}`);
    expect(CarrierAccountResponse.strict().parse(read.body)).toEqual(account);
    const patched = await t.request('PATCH', `/v2/carrier-accounts/${id}`, { body: { name: 'renamed' } });
    expect(patched.status).toBe(200);
    expect(CarrierAccountResponse.strict().parse(patched.body)).toMatchObject({ name: 'renamed', numbers: [number] });
    const listed = await t.request('POST', '/v2/carrier-accounts/list', { body: {} });
    for (const text of [res.text, read.text, patched.text, listed.text]) {
      expect(text).not.toContain(keys.authToken);
      expect(text).not.toContain(keys.accountSid);
      expect(text).not.toContain('credentials');
    }
    expect(t.logs.filter((line) => line.includes(keys.authToken))).toEqual([]);
  });

  it('keeps every carrier’s credentials sealed at rest: the stored row holds no plaintext, and the one key opens it', async () => {
    const { carrier_account_id: id } = await create({
      carrier: 'plivo',
      name: 'plivo',
      numbers: [],
      credentials: OTHER_CARRIERS.plivo,
    });
    const row = t.service.db!.prepare('SELECT account FROM carrier_accounts WHERE carrier_account_id = ?').get(id) as {
      account: string;
    };
    expect(row.account).not.toContain(OTHER_CARRIERS.plivo.auth_token);
    expect(row.account).not.toContain(OTHER_CARRIERS.plivo.auth_id);
    const stored = JSON.parse(row.account) as { credentials: Record<string, string> };
    const box = new SecretBox(loadOrCreateSecretsKey(undefined, t.dataDir, () => '').key);
    expect(stored.credentials.auth_token).toMatch(/^sealed:v1:/);
    expect(box.open(stored.credentials.auth_token!)).toBe(OTHER_CARRIERS.plivo.auth_token);
  });

  it('keeps Telnyx, Vonage, Plivo and SignalWire accounts as given (no check yet), none of their secrets returned', async () => {
    for (const [carrier, credentials] of Object.entries(OTHER_CARRIERS)) {
      const res = await t.request('POST', '/v2/carrier-accounts', {
        body: { carrier, name: carrier, numbers: [fresh()], credentials },
      });
      expect(res.status, res.text).toBe(201);
      for (const value of Object.values(credentials)) expect(res.text).not.toContain(value);
    }
  });

  it('refuses Twilio credentials the carrier answers 401 to: 400 naming credentials.auth_token, nothing stored', async () => {
    const before = ListCarrierAccountsResponse.parse(
      (await t.request('POST', '/v2/carrier-accounts/list', { body: {} })).body,
    ).total_count;
    const number = fresh();
    const res = await t.request('POST', '/v2/carrier-accounts', {
      body: twilioAccount([number], { accountSid: twilio.accountSid, authToken: 'not-the-token-0000' }),
    });
    expect(res.status).toBe(400);
    expect(errorOf(res)).toMatchObject({ code: 'BAD_REQUEST' });
    expect(errorOf(res).details).toMatch(/^body\.credentials\.auth_token: Twilio refused it .*HTTP 401/);
    expect(res.text).not.toContain('not-the-token-0000');
    const after = ListCarrierAccountsResponse.parse(
      (await t.request('POST', '/v2/carrier-accounts/list', { body: {} })).body,
    ).total_count;
    expect(after).toBe(before);
    // The number was not claimed either: another organization may take it.
    await create(twilioAccount([number]), 'globex');
  });

  it('refuses a malformed body with 400 naming the field: the carrier’s own credential fields, numbers, unknown keys', async () => {
    const cases: [Record<string, unknown>, RegExp][] = [
      [
        { carrier: 'twilio', name: 'x', credentials: { account_sid: 'nope', auth_token: 'abcdefgh12' } },
        /body\.credentials\.account_sid/,
      ],
      [{ carrier: 'telnyx', name: 'x', credentials: { api_key: 'KEYabcdefgh' } }, /body\.credentials\.public_key/],
      [{ ...twilioAccount(['555']) }, /body\.numbers\.0/],
      [
        {
          ...twilioAccount([]),
          credentials: { account_sid: `AC${'0'.repeat(32)}`, auth_token: 'abcdefgh12', extra: 1 },
        },
        /extra/,
      ],
      [{ carrier: 'nokia', name: 'x', credentials: {} }, /carrier/],
    ];
    for (const [body, field] of cases) {
      const res = await t.request('POST', '/v2/carrier-accounts', { body });
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(errorOf(res).details).toMatch(field);
    }
  });

  it('changes numbers (those dropped are let go) and credentials (whole, of the same carrier, tried at Twilio first)', async () => {
    const [kept, dropped] = [fresh(), fresh()];
    const account = await create(twilioAccount([kept, dropped]));
    const id = account.carrier_account_id;
    const patched = await t.request('PATCH', `/v2/carrier-accounts/${id}`, { body: { numbers: [kept] } });
    expect(CarrierAccountResponse.parse(patched.body).numbers).toEqual([kept]);
    await create(twilioAccount([dropped]), 'globex');

    const otherCarrier = await t.request('PATCH', `/v2/carrier-accounts/${id}`, {
      body: { credentials: OTHER_CARRIERS.plivo },
    });
    expect(otherCarrier.status).toBe(400);
    expect(errorOf(otherCarrier).details).toMatch(/body\.credentials\.account_sid.*twilio account/);
    const refused = await t.request('PATCH', `/v2/carrier-accounts/${id}`, {
      body: { credentials: { account_sid: twilio.accountSid, auth_token: 'wrong-token-1234' } },
    });
    expect(refused.status).toBe(400);
    expect(errorOf(refused).details).toMatch(/^body\.credentials\.auth_token/);
    const rotated = twilio.addAccount();
    const ok = await t.request('PATCH', `/v2/carrier-accounts/${id}`, {
      body: { credentials: { account_sid: rotated.accountSid, auth_token: rotated.authToken } },
    });
    expect(ok.status, ok.text).toBe(200);
  });

  it('deletes an account (204, then 404) and lets its numbers go; another organization can neither see nor change it', async () => {
    const number = fresh();
    const { carrier_account_id: id } = await create(twilioAccount([number]));
    const globex = t.keyOf('globex');
    expect((await t.request('GET', `/v2/carrier-accounts/${id}`, { key: globex })).status).toBe(404);
    expect((await t.request('PATCH', `/v2/carrier-accounts/${id}`, { key: globex, body: { name: 'x' } })).status).toBe(
      404,
    );
    expect((await t.request('DELETE', `/v2/carrier-accounts/${id}`, { key: globex })).status).toBe(404);
    expect((await t.request('DELETE', `/v2/carrier-accounts/${id}`)).status).toBe(204);
    expect((await t.request('GET', `/v2/carrier-accounts/${id}`)).status).toBe(404);
    expect((await t.request('DELETE', `/v2/carrier-accounts/${id}`)).status).toBe(404);
    await create(twilioAccount([number]), 'globex');
  });

  it('lists the organization’s accounts newest first in keyset pages with total_count, filtered by carrier', async () => {
    const org = 'paging-descending';
    const made: string[] = [];
    for (let i = 0; i < 3; i++)
      made.push(
        (await create({ carrier: 'plivo', name: `p${i}`, credentials: OTHER_CARRIERS.plivo }, org)).carrier_account_id,
      );
    await create({ carrier: 'telnyx', name: 'tx', credentials: OTHER_CARRIERS.telnyx }, org);
    const seen: string[] = [];
    let pagination_key: string | null = null;
    do {
      const res = await t.request('POST', '/v2/carrier-accounts/list', {
        key: t.keyOf(org),
        body: { filter_criteria: { carrier: ['plivo'] }, limit: 2, ...(pagination_key ? { pagination_key } : {}) },
      });
      const page = ListCarrierAccountsResponse.strict().parse(res.body);
      expect(page.total_count).toBe(3);
      seen.push(...page.carrier_accounts.map((a) => a.carrier_account_id));
      pagination_key = page.next_cursor;
    } while (pagination_key);
    expect(seen).toEqual([...made].reverse());
    const bad = await t.request('POST', '/v2/carrier-accounts/list', {
      key: t.keyOf(org),
      body: { pagination_key: 'garbage' },
    });
    expect(bad.status).toBe(400);
  });
});

describe('carrier accounts in the OpenAPI document', () => {
  it('lists the five endpoints, marks every carrier’s credential writeOnly, and no response shape has credentials', async () => {
    type Operation = {
      requestBody?: { content: Record<string, { schema: unknown }> };
      responses: Record<string, unknown>;
    };
    const doc = (await t.request('GET', '/openapi.json', { key: null })).body as {
      paths: Record<string, Record<string, Operation>>;
    };
    const collection = doc.paths['/v2/carrier-accounts']!;
    const one = doc.paths['/v2/carrier-accounts/{carrier_account_id}']!;
    const list = doc.paths['/v2/carrier-accounts/list']!;
    expect([collection.post, one.get, one.patch, one.delete, list.post].every(Boolean)).toBe(true);
    const create = JSON.stringify(collection.post!.requestBody!.content['application/json']!.schema);
    // twilio 2, telnyx 3, vonage 3, plivo 2, signalwire 4.
    expect(create.match(/"writeOnly":true/g)).toHaveLength(14);
    for (const operation of [collection.post!, one.get!, one.patch!, list.post!])
      expect(JSON.stringify(operation.responses)).not.toContain('credentials');
  });
});

describe('a number belongs to one organization', () => {
  it('409 NUMBER_TAKEN for a number another organization’s account or agent holds, and for an agent’s number on another organization’s account', async () => {
    const [onAccount, onAgent] = [fresh(), fresh()];
    await create(twilioAccount([onAccount]));
    const agent = (agentId: string, number: string) => ({
      agent_id: agentId,
      agent_name: agentId,
      llm: { base_url: 'http://127.0.0.1:9/v1', model: 'm' },
      inbound_numbers: [number],
    });
    expect((await t.request('POST', '/v2/agents', { body: agent('acme-desk', onAgent) })).status).toBe(201);

    const accountClash = await t.request('POST', '/v2/carrier-accounts', {
      key: t.keyOf('globex'),
      body: twilioAccount([onAccount]),
    });
    expect(accountClash.status).toBe(409);
    expect(errorOf(accountClash)).toMatchObject({ code: 'NUMBER_TAKEN' });
    expect(errorOf(accountClash).details).toMatch(/^body\.numbers: .* belongs to another organization/);
    const agentNumber = await t.request('POST', '/v2/carrier-accounts', {
      key: t.keyOf('globex'),
      body: { carrier: 'plivo', name: 'p', numbers: [onAgent], credentials: OTHER_CARRIERS.plivo },
    });
    expect(errorOf(agentNumber).code).toBe('NUMBER_TAKEN');
    const agentOnAccount = await t.request('POST', '/v2/agents', {
      key: t.keyOf('globex'),
      body: agent('globex-desk', onAccount),
    });
    expect(agentOnAccount.status).toBe(409);
    expect(errorOf(agentOnAccount).code).toBe('NUMBER_TAKEN');

    // Within the organization: its agent may answer the account's number, and its agent's number may go on an
    // account; a second account of the organization may not hold the same number.
    expect((await t.request('POST', '/v2/agents', { body: agent('acme-line', onAccount) })).status).toBe(201);
    await create({ carrier: 'plivo', name: 'p', numbers: [onAgent], credentials: OTHER_CARRIERS.plivo });
    const twice = await t.request('POST', '/v2/carrier-accounts', { body: twilioAccount([onAccount]) });
    expect(twice.status).toBe(409);
    expect(errorOf(twice).details).toMatch(/already on carrier account cacct_/);
  });
});

describe('inbound calls to a number on an organization’s Twilio account', () => {
  const agentFor = (agentId: string, number: string) => ({
    agent_id: agentId,
    agent_name: agentId,
    begin_message: '',
    llm: { base_url: 'http://127.0.0.1:9/v1', model: 'm' },
    inbound_numbers: [number],
  });
  const call = (to: string, token: string) =>
    voiceWebhook(t.url, { CallSid: `CA${randomBytes(16).toString('hex')}`, From: '+14155550100', To: to }, token);

  it('are checked with the account’s auth token: the service-wide token is refused (403, no call), the account’s is answered', async () => {
    const number = fresh();
    const keys = twilio.addAccount();
    await create(twilioAccount([number], keys));
    expect((await t.request('POST', '/v2/agents', { body: agentFor('own-line', number) })).status).toBe(201);
    const calls = async () =>
      (await t.request('POST', '/v2/calls/list', { body: { filter_criteria: { agent_id: ['own-line'] } } })).text;
    const refused = await call(number, TEST_TWILIO_TOKEN);
    expect(refused.status).toBe(403);
    expect(await calls()).not.toContain('call_');
    const answered = await call(number, keys.authToken);
    expect(answered.status).toBe(200);
    expect(await answered.text()).toContain('<Connect><Stream');
    // A number no account holds is still the service-wide account's.
    const plain = fresh();
    expect((await t.request('POST', '/v2/agents', { body: agentFor('plain-line', plain) })).status).toBe(201);
    expect((await call(plain, TEST_TWILIO_TOKEN)).status).toBe(200);
    expect((await call(plain, keys.authToken)).status).toBe(403);
  });

  it('an account a call is going through cannot be deleted (409 CARRIER_ACCOUNT_IN_USE naming the call) until the call has ended', async () => {
    const number = fresh();
    const keys = twilio.addAccount();
    const { carrier_account_id: id } = await create(twilioAccount([number], keys));
    expect((await t.request('POST', '/v2/agents', { body: agentFor('busy-line', number) })).status).toBe(201);
    const twiml = await (await call(number, keys.authToken)).text();
    const callId = /name="call_id" value="([^"]+)"/.exec(twiml)![1]!;
    const refused = await t.request('DELETE', `/v2/carrier-accounts/${id}`);
    expect(refused.status).toBe(409);
    expect(errorOf(refused)).toMatchObject({ code: 'CARRIER_ACCOUNT_IN_USE' });
    expect(errorOf(refused).details).toContain(callId);
    // No stream comes (STREAM_CONNECT_TIMEOUT_MS): the call ends, and the account can go.
    await vi.waitFor(
      async () => {
        const record = CallRecordSchema.parse((await t.request('GET', `/v2/calls/${callId}`)).body);
        expect(['ended', 'error', 'not_connected']).toContain(record.call_status);
      },
      { timeout: 15_000, interval: 100 },
    );
    expect((await t.request('DELETE', `/v2/carrier-accounts/${id}`)).status).toBe(204);
  });
});
