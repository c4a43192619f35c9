// The privileges an application role needs to run `serve` and `work`, and nothing more: no DDL, so
// the schema changes only through `load-control migrate` under database.migrationUrl.
import type pg from 'pg';

/** The runner's bookkeeping: the application reads it to compare the schema with its release, never writes it. */
const BOOKKEEPING_TABLES = ['lc_migration', 'lc_function_file'];

/**
 * The GRANT statements for `role`, read from the live schema (run it after `migrate`): USAGE on nifi_ops,
 * DML on every ledger table (DELETE for the gate's redefinition and the ledger's retention), SELECT on
 * the runner's tables, sequences for identity columns, EXECUTE on the SQL functions; and the same as
 * default privileges for tables, sequences and functions the migrating role creates in later releases.
 */
export async function applicationGrants(client: pg.ClientBase, role: string): Promise<string[]> {
  const { rows: roles } = await client.query<{ exists: boolean; owner: string }>(
    `SELECT EXISTS (SELECT FROM pg_roles WHERE rolname = $1) AS exists, current_user AS owner`,
    [role],
  );
  if (!roles[0]!.exists)
    throw new Error(`role ${role} does not exist: CREATE ROLE ${client.escapeIdentifier(role)} LOGIN PASSWORD '…' first`);
  const { rows: tables } = await client.query<{ name: string }>(
    `SELECT c.relname AS name FROM pg_class c
      WHERE c.relnamespace = 'nifi_ops'::regnamespace AND c.relkind IN ('r', 'p') ORDER BY 1`,
  );
  if (tables.length === 0) throw new Error('schema nifi_ops has no tables: run `load-control migrate` first');
  const { rows: sequences } = await client.query<{ name: string }>(
    `SELECT c.relname AS name FROM pg_class c WHERE c.relnamespace = 'nifi_ops'::regnamespace AND c.relkind = 'S' ORDER BY 1`,
  );
  const { rows: functions } = await client.query<{ signature: string }>(
    `SELECT format('%I(%s)', p.proname, pg_get_function_identity_arguments(p.oid)) AS signature
       FROM pg_proc p WHERE p.pronamespace = 'nifi_ops'::regnamespace AND p.prokind = 'f' ORDER BY 1`,
  );
  const to = client.escapeIdentifier(role);
  const owner = client.escapeIdentifier(roles[0]!.owner);
  const table = (name: string) => `nifi_ops.${client.escapeIdentifier(name)}`;
  return [
    `GRANT USAGE ON SCHEMA nifi_ops TO ${to};`,
    ...tables.map(({ name }) =>
      BOOKKEEPING_TABLES.includes(name)
        ? `GRANT SELECT ON ${table(name)} TO ${to};`
        : `GRANT SELECT, INSERT, UPDATE, DELETE ON ${table(name)} TO ${to};`,
    ),
    ...sequences.map(({ name }) => `GRANT USAGE, SELECT ON SEQUENCE ${table(name)} TO ${to};`),
    ...functions.map(({ signature }) => `GRANT EXECUTE ON FUNCTION nifi_ops.${signature} TO ${to};`),
    `ALTER DEFAULT PRIVILEGES FOR ROLE ${owner} IN SCHEMA nifi_ops GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO ${to};`,
    `ALTER DEFAULT PRIVILEGES FOR ROLE ${owner} IN SCHEMA nifi_ops GRANT USAGE, SELECT ON SEQUENCES TO ${to};`,
    `ALTER DEFAULT PRIVILEGES FOR ROLE ${owner} IN SCHEMA nifi_ops GRANT EXECUTE ON FUNCTIONS TO ${to};`,
  ];
}
