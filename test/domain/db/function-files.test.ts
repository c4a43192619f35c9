import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../support/database.js';
import { definedInFiles, readFunctionFileDrift } from '../../support/function-files.js';

const noDrift = { changedBodies: [], undefinedLive: [], missing: [], triggerDifferences: [] };

describe('prisma/functions is the one definition of every SQL function and trigger', () => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await createTestDatabase();
  });
  afterAll(async () => {
    await database.drop();
  });

  it('defines each function once, in one file', async () => {
    const { functions, triggers } = await definedInFiles();
    const names = functions.map((fn) => fn.name);
    expect(names.length).toBeGreaterThan(0);
    expect(new Set(names).size).toBe(names.length);
    expect(triggers.length).toBeGreaterThan(0);
  });

  it('every live function body equals its file, and the database has no function or trigger the files do not define', async () => {
    expect(await readFunctionFileDrift(database.url)).toEqual(noDrift);
  });

  it('notices a body changed by hand, an extra overload and a dropped trigger', async () => {
    const other = await createTestDatabase();
    const client = new pg.Client({ connectionString: other.url });
    await client.connect();
    try {
      await client.query(
        `CREATE OR REPLACE FUNCTION nifi_ops.notify_alert() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$`,
      );
      await client.query(`CREATE FUNCTION nifi_ops.record_api_event(p_level text) RETURNS uuid LANGUAGE sql AS $$ SELECT NULL::uuid $$`);
      await client.query('DROP TRIGGER tr_load_validation_notify ON nifi_ops.load_validation');
      const drift = await readFunctionFileDrift(other.url);
      expect(drift.changedBodies).toEqual(['notify_alert() (04_realtime_notify.sql)']);
      expect(drift.undefinedLive).toEqual(['record_api_event(p_level text)']);
      expect(drift.missing).toEqual([]);
      expect(drift.triggerDifferences).toEqual(['missing: tr_load_validation_notify on load_validation → notify_run_changed']);
    } finally {
      await client.end();
      await other.drop();
    }
  });
});
