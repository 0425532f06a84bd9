// SIP trunks (docs/carriers/sip.md): an organization's phone system or carrier sending calls straight to the agents
// over SIP. A trunk lists the numbers it calls and who may send them: source addresses (CIDR blocks), or a username
// and password the caller proves by digest. Passwords are write-only: never in a response, sealed in the store
// (secrets/fields.ts) with the one SecretBox every secret is sealed with.
import { isIP } from 'node:net';
import { z } from 'zod';
import { E164 } from '../agents/schema.ts';
import { SecretFields, writeOnlySecret } from '../secrets/fields.ts';

/** An IPv4 or IPv6 address, or a CIDR block of them. */
export function isCidr(text: string): boolean {
  const [net, prefix, ...rest] = text.split('/');
  const family = isIP(net ?? '');
  if (family === 0 || rest.length > 0) return false;
  if (prefix === undefined) return true;
  return /^\d{1,3}$/.test(prefix) && Number(prefix) <= (family === 4 ? 32 : 128);
}

const Cidr = z
  .string()
  .max(60)
  .refine(isCidr, 'must be an IPv4 or IPv6 address or CIDR block, like 203.0.113.0/24')
  .describe('a source address or CIDR block calls may come from');

// The digest username travels in a quoted string: no quotes, backslashes or control characters.
const Username = z
  .string()
  .regex(/^[A-Za-z0-9._~!$&'()*+,;=%@-]{1,100}$/, "must be 1 to 100 letters, digits or ._~!$&'()*+,;=%@-")
  .describe('the digest username');
const Password = writeOnlySecret('the digest password; write-only', {
  pattern: /^[^\s"\\]{8,200}$/,
  message: 'must be 8 to 200 characters, no spaces, quotes or backslashes',
});

const bothOrNeither = (v: { username?: string | undefined; password?: string | undefined }) =>
  (v.username === undefined) === (v.password === undefined);
const CREDENTIAL_PAIR = { message: 'give username and password together, or neither', path: ['password'] };

const Inbound = z
  .strictObject({
    allowed_addresses: z.array(Cidr).max(100).default([]).describe('calls from these addresses are taken as they come'),
    username: Username.optional(),
    password: Password.optional(),
  })
  .refine(bothOrNeither, CREDENTIAL_PAIR)
  .refine((v) => v.allowed_addresses.length > 0 || v.username !== undefined, {
    message: 'name allowed_addresses, or a username and password, or both: otherwise no call can come in',
    path: ['allowed_addresses'],
  })
  .describe('who may send calls in: an allowed source address, or a caller proving the username and password');

const HOST_PORT = /^(?:\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]{1,253})(?::\d{1,5})?$/;
const Outbound = z
  .strictObject({
    address: z
      .string()
      .regex(HOST_PORT, 'must be host[:port], an IPv6 address in brackets')
      .refine(
        (a) => Number(/:(\d+)$/.exec(a.startsWith('[') ? a.replace(/^\[[^\]]*\]/, '') : a)?.[1] ?? 5060) <= 65535,
        'port must be at most 65535',
      )
      .describe("where calls out go: the carrier's or phone system's SIP address, host[:port] (5060 by default)"),
    transport: z.enum(['udp', 'tcp']).default('udp'),
    username: Username.optional(),
    password: Password.optional(),
  })
  .refine(bothOrNeither, CREDENTIAL_PAIR)
  .describe(
    "where and how calls from the trunk's numbers go out: POST /v2/calls with call_from one of them dials through it",
  );

const TrunkName = z.string().min(1).max(100).describe('what the organization calls the trunk');
const Numbers = z
  .array(E164)
  .min(1)
  .max(1000)
  .refine((numbers) => new Set(numbers).size === numbers.length, 'lists a number twice')
  .describe(
    "the trunk's numbers (E.164): each belongs to this organization alone (409 NUMBER_TAKEN when another holds it)",
  );

export const CreateSipTrunkBody = z.strictObject({
  name: TrunkName,
  numbers: Numbers,
  inbound: Inbound,
  outbound: Outbound.optional(),
});
export type CreateSipTrunk = z.infer<typeof CreateSipTrunkBody>;

/** The fields given replace the stored ones whole (a password must be given again with its username). */
export const PatchSipTrunkBody = z.strictObject({
  name: TrunkName.optional(),
  numbers: Numbers.optional().describe('replaces the list; numbers left out are let go'),
  inbound: Inbound.optional().describe('replaces the inbound side whole, password included'),
  outbound: Outbound.nullable().optional().describe('replaces the outbound side whole; null removes it'),
});
export type PatchSipTrunk = z.infer<typeof PatchSipTrunkBody>;

export const SipTrunkIdParams = z.strictObject({ sip_trunk_id: z.string().min(1).max(200) });

export const SipTrunkResponse = z.object({
  sip_trunk_id: z.string(),
  name: z.string(),
  numbers: z.array(z.string()),
  inbound: z.object({ allowed_addresses: z.array(z.string()), username: z.string().optional() }),
  outbound: z
    .object({ address: z.string(), transport: z.enum(['udp', 'tcp']), username: z.string().optional() })
    .optional(),
  created_at: z.int().describe('Unix epoch ms'),
  updated_at: z.int().describe('Unix epoch ms'),
});
type SipTrunkView = z.infer<typeof SipTrunkResponse>;

export const ListSipTrunksBody = z.strictObject({
  filter_criteria: z.strictObject({ name: z.array(z.string().max(100)).max(100).optional() }).optional(),
  sort_order: z.enum(['ascending', 'descending']).default('descending').describe('by created_at, ties by id'),
  limit: z.int().min(1).max(500).default(50),
  pagination_key: z.string().max(1000).nullable().optional(),
});
export type ListSipTrunksQuery = z.infer<typeof ListSipTrunksBody>;

export const ListSipTrunksResponse = z.object({
  sip_trunks: z.array(SipTrunkResponse),
  next_cursor: z.string().nullable(),
  total_count: z.int(),
});

/** A trunk as the store keeps it (passwords sealed there) and the SIP carrier uses it (passwords open). */
const SipTrunkSchema = SipTrunkResponse.extend({
  inbound: SipTrunkResponse.shape.inbound.extend({ password: Password.optional() }),
  outbound: SipTrunkResponse.shape.outbound.unwrap().extend({ password: Password.optional() }).optional(),
});
export type SipTrunk = z.infer<typeof SipTrunkSchema>;

/** The write-only fields of a stored trunk: its passwords. */
export const SIP_TRUNK_SECRETS = new SecretFields(SipTrunkSchema);

/** A trunk as responses show it: everything but its passwords. */
export function sipTrunkView(trunk: SipTrunk): SipTrunkView {
  const { password: _in, ...inbound } = trunk.inbound;
  const view: SipTrunkView = { ...trunk, inbound };
  if (trunk.outbound) {
    const { password: _out, ...outbound } = trunk.outbound;
    view.outbound = outbound;
  }
  return view;
}
