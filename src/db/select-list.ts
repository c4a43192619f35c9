import { Prisma } from '../generated/prisma/client.js';

/** Every field of Row, each once: a select list that names fewer or more fields than its row type does not compile. */
export type FieldsOf<Row> = { [K in keyof Row]-?: true };

/**
 * The select list of a declared row type: each camelCase field read from its snake_case column
 * (`run_id AS "runId"`), qualified by `alias` when given. The columns' existence is the database's to check,
 * which every test that reads the row does.
 */
export function selectList<Row>(fields: FieldsOf<Row>, alias?: string): Prisma.Sql {
  const prefix = alias ? `${alias}.` : '';
  return Prisma.raw(
    Object.keys(fields)
      .map((field) => `${prefix}${field.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`)} AS "${field}"`)
      .join(', '),
  );
}
