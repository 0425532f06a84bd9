// Secrets written before sealing (plaintext in agent versions and agent tests) are sealed at start,
// each row rewritten only if it is still the row that was read; and every sealed secret is opened
// once, so a node given the wrong SECRETS_KEY stops at start with SecretKeyError, not at a call.
import { AGENT_TEST_SECRETS } from '../agent-tests/schema.ts';
import { AGENT_SECRETS } from '../agents/schema.ts';
import { CREDENTIAL_SECRETS } from '../credentials/schema.ts';
import { CARRIER_ACCOUNT_SECRETS } from '../carrier-accounts/schema.ts';
import type { SecretFields } from '../secrets/fields.ts';
import type { SecretBox } from '../secrets/sealed.ts';

/** The tables whose JSON documents hold secrets, and the column each document is in. */
export const SECRET_DOCUMENTS: readonly { table: string; column: string; fields: SecretFields }[] = [
  { table: 'agent_versions', column: 'config', fields: AGENT_SECRETS },
  { table: 'agent_tests', column: 'test', fields: AGENT_TEST_SECRETS },
  { table: 'provider_credentials', column: 'credential', fields: CREDENTIAL_SECRETS },
  { table: 'carrier_accounts', column: 'account', fields: CARRIER_ACCOUNT_SECRETS },
];

/**
 * The document sealed anew when it still holds plaintext, or null; throws SecretKeyError when a sealed secret does not
 * open.
 */
export function resealed(text: string, fields: SecretFields, box: SecretBox): string | null {
  const document: unknown = JSON.parse(text);
  fields.open(document, box);
  return fields.hasPlaintext(document) ? JSON.stringify(fields.seal(document, box)) : null;
}
