// Carrier accounts: an organization's own account at a phone carrier (docs/carriers/accounts.md), with the numbers
// it holds there. A call to or from one of those numbers goes through that account: its webhooks are checked with
// its secret, its calls placed with its keys. The credentials are write-only: never in a response, sealed in the
// store (secrets/fields.ts) with the one SecretBox every secret is sealed with. The service-wide TWILIO_* account
// stays every organization's default for numbers no account holds.
import { z } from 'zod';
import { E164 } from '../agents/schema.ts';
import { SecretFields, writeOnlySecret } from '../secrets/fields.ts';

const CARRIER_NAMES = ['twilio', 'telnyx', 'vonage', 'plivo', 'signalwire'] as const;
export type CarrierName = (typeof CARRIER_NAMES)[number];

const secret = writeOnlySecret;
const UUID = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;

const TwilioCredentials = z.strictObject({
  account_sid: secret('the account SID (AC and 32 characters); write-only', {
    pattern: /^AC[0-9a-zA-Z]{32}$/,
    message: 'must be a Twilio account SID: AC and 32 characters',
  }),
  auth_token: secret("the account's auth token: signs its webhooks and opens its REST API; write-only", {
    pattern: /^\S{8,200}$/,
    message: 'must be the auth token: 8 to 200 characters, no spaces',
  }),
});

const TelnyxCredentials = z.strictObject({
  api_key: secret('the API v2 key; write-only', { pattern: /^\S{8,500}$/, message: 'must be a Telnyx API key' }),
  public_key: secret("the account's ed25519 webhook public key, base64 (32 bytes); write-only", {
    pattern: /^[A-Za-z0-9+/]{43}=$/,
    message: 'must be the base64 of a 32-byte ed25519 public key',
  }),
  connection_id: secret("the TeXML application's connection id; write-only", {
    pattern: /^\S{1,100}$/,
    message: 'must be a Telnyx connection id',
  }),
});

const VonageCredentials = z.strictObject({
  application_id: secret('the Voice application id (a UUID); write-only', {
    pattern: UUID,
    message: 'must be a Vonage application id: a UUID',
  }),
  private_key: secret("the application's private key, PEM; write-only", {
    pattern: /^-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]+-----END [A-Z ]*PRIVATE KEY-----\s*$/,
    message: 'must be a PEM private key (-----BEGIN PRIVATE KEY----- …)',
    max: 20_000,
  }),
  signature_secret: secret("the account's signature secret (signs its webhooks); write-only", {
    pattern: /^\S{8,200}$/,
    message: 'must be the signature secret: 8 to 200 characters, no spaces',
  }),
});

const PlivoCredentials = z.strictObject({
  auth_id: secret('the Auth ID (MA… or SA…, 20 characters); write-only', {
    pattern: /^[MS]A[A-Z0-9]{18}$/,
    message: 'must be a Plivo Auth ID: MA or SA and 18 letters or digits',
  }),
  auth_token: secret('the Auth Token; write-only', {
    pattern: /^\S{8,200}$/,
    message: 'must be the auth token: 8 to 200 characters, no spaces',
  }),
});

const SignalWireCredentials = z.strictObject({
  space_url: secret('the space, example.signalwire.com (its REST API is there); write-only', {
    pattern: /^(https:\/\/)?[a-z0-9-]+(\.[a-z0-9-]+)+\/?$/i,
    message: 'must be the space address, like example.signalwire.com',
  }),
  project_id: secret('the project id (a UUID); write-only', {
    pattern: UUID,
    message: 'must be a SignalWire project id: a UUID',
  }),
  api_token: secret('the project API token; write-only', {
    pattern: /^\S{8,500}$/,
    message: 'must be the API token: 8 to 500 characters, no spaces',
  }),
  signing_key: secret("the space's signing key (signs its webhooks); write-only", {
    pattern: /^\S{8,500}$/,
    message: 'must be the signing key: 8 to 500 characters, no spaces',
  }),
});

/** Each carrier's credentials. */
export const CARRIER_CREDENTIALS = {
  twilio: TwilioCredentials,
  telnyx: TelnyxCredentials,
  vonage: VonageCredentials,
  plivo: PlivoCredentials,
  signalwire: SignalWireCredentials,
} as const satisfies Record<CarrierName, z.ZodType>;

export type TwilioCredentialsValue = z.infer<typeof TwilioCredentials>;
export type CarrierCredentials = { [C in CarrierName]: z.infer<(typeof CARRIER_CREDENTIALS)[C]> }[CarrierName];

const AccountName = z.string().min(1).max(100).describe('what the organization calls the account');
const Numbers = z
  .array(E164)
  .max(1000)
  .refine((numbers) => new Set(numbers).size === numbers.length, 'lists a number twice')
  .describe(
    "the account's numbers (E.164); each belongs to this organization alone (409 NUMBER_TAKEN when another holds it)",
  );

const createVariant = <C extends CarrierName>(carrier: C) =>
  z.strictObject({
    carrier: z.literal(carrier),
    name: AccountName,
    numbers: Numbers.default([]),
    credentials: CARRIER_CREDENTIALS[carrier].describe(`the ${carrier} account's credentials; write-only`),
  });

export const CreateCarrierAccountBody = z.discriminatedUnion('carrier', [
  createVariant('twilio'),
  createVariant('telnyx'),
  createVariant('vonage'),
  createVariant('plivo'),
  createVariant('signalwire'),
]);
export type CreateCarrierAccount = z.infer<typeof CreateCarrierAccountBody>;

/** Any carrier's credentials. */
const AnyCredentials = z.union([
  TwilioCredentials,
  TelnyxCredentials,
  VonageCredentials,
  PlivoCredentials,
  SignalWireCredentials,
]);

/** Credentials in a PATCH replace the stored ones whole, and must be the account's carrier's (the service checks). */
export const PatchCarrierAccountBody = z.strictObject({
  name: AccountName.optional(),
  numbers: Numbers.optional().describe('replaces the list; numbers left out are let go'),
  credentials: AnyCredentials.optional().describe(
    "the account's carrier's credentials, all of them: they replace the stored ones; write-only",
  ),
});
export type PatchCarrierAccount = z.infer<typeof PatchCarrierAccountBody>;

export const CarrierAccountIdParams = z.strictObject({ carrier_account_id: z.string().min(1).max(200) });

export const CarrierAccountResponse = z.object({
  carrier_account_id: z.string(),
  carrier: z.enum(CARRIER_NAMES),
  name: z.string(),
  numbers: z.array(z.string()),
  created_at: z.int().describe('Unix epoch ms'),
  updated_at: z.int().describe('Unix epoch ms'),
});

export const ListCarrierAccountsBody = z.strictObject({
  filter_criteria: z
    .strictObject({
      carrier: z.array(z.enum(CARRIER_NAMES)).max(CARRIER_NAMES.length).optional(),
      name: z.array(z.string().max(100)).max(100).optional(),
    })
    .optional(),
  sort_order: z.enum(['ascending', 'descending']).default('descending').describe('by created_at, ties by id'),
  limit: z.int().min(1).max(500).default(50),
  pagination_key: z.string().max(1000).nullable().optional(),
});
export type ListCarrierAccountsQuery = z.infer<typeof ListCarrierAccountsBody>;

export const ListCarrierAccountsResponse = z.object({
  carrier_accounts: z.array(CarrierAccountResponse),
  next_cursor: z.string().nullable(),
  total_count: z.int(),
});

/** An account as the store keeps it (credentials sealed there) and the carriers use it (credentials open). */
const CarrierAccountSchema = CarrierAccountResponse.extend({ credentials: AnyCredentials });
export type CarrierAccount = z.infer<typeof CarrierAccountResponse> & { credentials: CarrierCredentials };
type CarrierAccountView = z.infer<typeof CarrierAccountResponse>;

/** The write-only fields of a stored account: every credential. */
export const CARRIER_ACCOUNT_SECRETS = new SecretFields(CarrierAccountSchema);

/** An account as responses show it: everything but its credentials. */
export function carrierAccountView(account: CarrierAccount): CarrierAccountView {
  const { credentials: _credentials, ...view } = account;
  return view;
}

/** A Twilio account's credentials, or undefined for an account at another carrier. */
export function twilioCredentialsOf(account: CarrierAccount): TwilioCredentialsValue | undefined {
  return account.carrier === 'twilio' ? (account.credentials as TwilioCredentialsValue) : undefined;
}
