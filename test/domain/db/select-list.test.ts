import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../support/database.js';
import { selectList } from '../../../src/db/select-list.js';

interface FileRow {
  runId: string;
  chunkIndex: number;
  hdfsPath: string;
  recordCount: bigint;
}

const FILE_FIELDS = { runId: true, chunkIndex: true, hdfsPath: true, recordCount: true } as const;

describe('selectList: a row type read from its columns', () => {
  let database: TestDatabase;
  let client: pg.Client;
  beforeAll(async () => {
    database = await createTestDatabase();
    client = new pg.Client({ connectionString: database.url });
    await client.connect();
  });
  afterAll(async () => {
    await client?.end();
    await database?.drop();
  });

  it('reads each field from its snake_case column, of the alias when given', () => {
    expect(selectList<FileRow>(FILE_FIELDS).sql).toBe(
      'run_id AS "runId", chunk_index AS "chunkIndex", hdfs_path AS "hdfsPath", record_count AS "recordCount"',
    );
    expect(selectList<FileRow>(FILE_FIELDS, 'f').sql).toBe(
      'f.run_id AS "runId", f.chunk_index AS "chunkIndex", f.hdfs_path AS "hdfsPath", f.record_count AS "recordCount"',
    );
  });

  it('names real columns of the migrated schema, and the rows come back named by the fields', async () => {
    const { fields } = await client.query(`SELECT ${selectList<FileRow>(FILE_FIELDS, 'f').sql} FROM nifi_ops.load_file f LIMIT 0`);
    expect(fields.map((field) => field.name)).toEqual(['runId', 'chunkIndex', 'hdfsPath', 'recordCount']);
    await expect(client.query(`SELECT ${selectList<{ runID: string }>({ runID: true }).sql} FROM nifi_ops.load_file`)).rejects.toThrow(
      /column "run_i_d" does not exist/,
    );
  });
});
