// A number belongs to one organization (number_owners), claimed by an agent listing it among its inbound_numbers
// or by a carrier account holding it. Once neither does, the organization lets it go: the same statement after
// every write of an agent version or a carrier account, in each store's SQL. Parameters: the org id, three times.

/** SQLite. */
export const RELEASE_UNLISTED_NUMBERS_SQLITE = `DELETE FROM number_owners WHERE org_id = ? AND number NOT IN (
    SELECT j.value FROM agent_versions a, json_each(a.config, '$.inbound_numbers') j
    WHERE a.org_id = ? AND (
      a.version = (SELECT max(version) FROM agent_versions WHERE org_id = a.org_id AND agent_id = a.agent_id)
      OR a.version = (SELECT max(version) FROM agent_versions WHERE org_id = a.org_id AND agent_id = a.agent_id AND is_published = 1)))
  AND number NOT IN (SELECT number FROM carrier_account_numbers WHERE org_id = ?)`;

/** PostgreSQL. */
export const RELEASE_UNLISTED_NUMBERS_PG = `DELETE FROM number_owners WHERE org_id = ? AND number NOT IN (
    SELECT j.value FROM agent_versions a, jsonb_array_elements_text(a.config::jsonb -> 'inbound_numbers') j(value)
    WHERE a.org_id = ? AND (
      a.version = (SELECT max(version) FROM agent_versions WHERE org_id = a.org_id AND agent_id = a.agent_id)
      OR a.version = (SELECT max(version) FROM agent_versions WHERE org_id = a.org_id AND agent_id = a.agent_id AND is_published)))
  AND number NOT IN (SELECT number FROM carrier_account_numbers WHERE org_id = ?)`;
