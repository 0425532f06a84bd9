// The PostgreSQL store is tested against a real server: Debian's, started by the tests themselves
// in a temporary directory (test/helpers/postgres.ts). The service never needs it unless
// DATABASE_URL names a database.
export const testApt = [
  ['postgresql', 'a real PostgreSQL server for the store suite and the multi-node tests (DATABASE_URL)'],
];
