// A number belongs to one organization (number_owners), claimed by an agent listing it among its inbound_numbers,
// a carrier account or a SIP trunk holding it: the one claim below, in each store's SQL, for all three. Once none
// does, the organization lets it go: the same statement after every write of an agent version, a carrier account
// or a trunk. Parameters: the org id, four times.
import { NumberTakenError } from '../agents/repository.ts';
import type { Db } from './database.ts';
import { lockFor, type Queryable } from './postgres/db.ts';

/** Inside the caller's transaction: the number becomes the organization's, or NumberTakenError when another's. */
export function claimNumberSqlite(db: Db, number: string, orgId: string, at: number): void {
  db.prepare('INSERT OR IGNORE INTO number_owners (number, org_id, claimed_at) VALUES (?, ?, ?)').run(
    number,
    orgId,
    at,
  );
  const owner = db.prepare('SELECT org_id FROM number_owners WHERE number = ?').get(number) as
    { org_id: string } | undefined;
  if (owner?.org_id !== orgId) throw new NumberTakenError(number);
}

/** The same on PostgreSQL, under the number's own lock so two nodes cannot both take it. */
export async function claimNumberPg(tx: Queryable, number: string, orgId: string, at: number): Promise<void> {
  await lockFor(tx, `number:${number}`);
  await tx.run(
    'INSERT INTO number_owners (number, org_id, claimed_at) VALUES (?, ?, ?) ON CONFLICT (number) DO NOTHING',
    [number, orgId, at],
  );
  const owner = await tx.row<{ org_id: string }>('SELECT org_id FROM number_owners WHERE number = ?', [number]);
  if (owner?.org_id !== orgId) throw new NumberTakenError(number);
}

/** SQLite. */
export const RELEASE_UNLISTED_NUMBERS_SQLITE = `DELETE FROM number_owners WHERE org_id = ? AND number NOT IN (
    SELECT j.value FROM agent_versions a, json_each(a.config, '$.inbound_numbers') j
    WHERE a.org_id = ? AND (
      a.version = (SELECT max(version) FROM agent_versions WHERE org_id = a.org_id AND agent_id = a.agent_id)
      OR a.version = (SELECT max(version) FROM agent_versions WHERE org_id = a.org_id AND agent_id = a.agent_id AND is_published = 1)))
  AND number NOT IN (SELECT number FROM carrier_account_numbers WHERE org_id = ?)
  AND number NOT IN (SELECT number FROM sip_trunk_numbers WHERE org_id = ?)`;

/** PostgreSQL. */
export const RELEASE_UNLISTED_NUMBERS_PG = `DELETE FROM number_owners WHERE org_id = ? AND number NOT IN (
    SELECT j.value FROM agent_versions a, jsonb_array_elements_text(a.config::jsonb -> 'inbound_numbers') j(value)
    WHERE a.org_id = ? AND (
      a.version = (SELECT max(version) FROM agent_versions WHERE org_id = a.org_id AND agent_id = a.agent_id)
      OR a.version = (SELECT max(version) FROM agent_versions WHERE org_id = a.org_id AND agent_id = a.agent_id AND is_published)))
  AND number NOT IN (SELECT number FROM carrier_account_numbers WHERE org_id = ?)
  AND number NOT IN (SELECT number FROM sip_trunk_numbers WHERE org_id = ?)`;
