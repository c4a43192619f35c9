// The database side of realtime: which committed changes NOTIFY, with what payload, and which do not.
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startTestApi, type TestApi } from '../../support/api.js';
import { createRun, startRun } from '../../support/fixtures.js';
import { ALERT_CHANNEL, RUN_CHANGED_CHANNEL } from '../../../src/db/channels.js';

let api: TestApi;
let listener: pg.Client;
const received: Array<{ channel: string; payload: string }> = [];

beforeAll(async () => {
  api = await startTestApi();
  listener = new pg.Client({ connectionString: api.database.url });
  await listener.connect();
  listener.on('notification', (n) => received.push({ channel: n.channel, payload: n.payload ?? '' }));
  await listener.query(`LISTEN ${RUN_CHANGED_CHANNEL}`);
  await listener.query(`LISTEN ${ALERT_CHANNEL}`);
});
afterAll(async () => {
  await listener?.end();
  await api?.close();
});

/** Notifications are delivered after commit; a marker sent last tells us everything before it has arrived. */
async function settle(): Promise<Array<{ channel: string; payload: string }>> {
  const marker = randomUUID();
  await api.sql.query(`SELECT pg_notify('${RUN_CHANGED_CHANNEL}', $1)`, [marker]);
  for (let i = 0; i < 400 && !received.some((n) => n.payload === marker); i++) await new Promise((r) => setTimeout(r, 25));
  const got = received.splice(0).filter((n) => n.payload !== marker);
  return got;
}

beforeEach(async () => {
  await settle();
});

describe('NOTIFY triggers (prisma/functions/04_realtime_notify.sql)', () => {
  it('a new run notifies lc_run_changed with its run id', async () => {
    const run = await createRun(api);
    expect(await settle()).toEqual([{ channel: RUN_CHANGED_CHANNEL, payload: run.runId }]);
  });

  it('a status change notifies once per transaction; counter updates and rolled-back changes do not', async () => {
    const run = await createRun(api);
    await settle();
    await api.sql.query('UPDATE nifi_ops.load_run SET success_partition_count = 1, heartbeat_at = now() WHERE run_id = $1', [run.runId]);
    await api.sql.query(`UPDATE nifi_ops.load_run SET status = status WHERE run_id = $1`, [run.runId]);
    expect(await settle()).toEqual([]);

    const client = await api.sql.connect();
    try {
      await client.query('BEGIN');
      await client.query(`UPDATE nifi_ops.load_run SET status = 'FAILED_MANIFEST' WHERE run_id = $1`, [run.runId]);
      await client.query('ROLLBACK');
      expect(await settle()).toEqual([]);
      await client.query('BEGIN');
      await client.query(`UPDATE nifi_ops.load_run SET status = 'EXTRACTING' WHERE run_id = $1`, [run.runId]);
      await client.query(`UPDATE nifi_ops.load_run SET status = 'FAILED_EXTRACT' WHERE run_id = $1`, [run.runId]);
      await client.query('COMMIT');
    } finally {
      client.release();
    }
    expect(await settle()).toEqual([{ channel: RUN_CHANGED_CHANNEL, payload: run.runId }]);
    await api.sql.query('UPDATE nifi_ops.load_run SET cleaned_at = now() WHERE run_id = $1', [run.runId]);
    expect(await settle()).toEqual([{ channel: RUN_CHANGED_CHANNEL, payload: run.runId }]);
  });

  it('a dispatch insert or status change notifies its run; a lease or backoff does not', async () => {
    const run = await createRun(api);
    await settle();
    const dispatchId = randomUUID();
    await api.sql.query(`INSERT INTO nifi_ops.load_dispatch (dispatch_id, run_id, dispatch_type) VALUES ($1, $2, 'VALIDATE_RUN')`, [
      dispatchId,
      run.runId,
    ]);
    expect(await settle()).toEqual([{ channel: RUN_CHANGED_CHANNEL, payload: run.runId }]);
    await api.sql.query(
      `UPDATE nifi_ops.load_dispatch SET attempt_count = attempt_count + 1, next_attempt_at = now() + interval '1 minute',
              last_error = 'busy' WHERE dispatch_id = $1`,
      [dispatchId],
    );
    expect(await settle()).toEqual([]);
    await api.sql.query(`UPDATE nifi_ops.load_dispatch SET status = 'DEAD', dead_at = now() WHERE dispatch_id = $1`, [dispatchId]);
    expect(await settle()).toEqual([{ channel: RUN_CHANGED_CHANNEL, payload: run.runId }]);
  });

  it('metrics notify their run', async () => {
    const run = await createRun(api);
    await settle();
    await api.sql.query(
      `INSERT INTO nifi_ops.load_validation (run_id, stage, metric_name, result, query_version) VALUES ($1, 'STAGING', 'STAGE_COUNT', 'PASS', 'v1')`,
      [run.runId],
    );
    expect(await settle()).toEqual([{ channel: RUN_CHANGED_CHANNEL, payload: run.runId }]);
  });

  it('a WARN or ERROR event notifies lc_alert with its event id (and its run); INFO events do not', async () => {
    const run = await createRun(api);
    await settle();
    await api.sql.query(`SELECT nifi_ops.record_api_event('INFO', 'SOMETHING_FINE', $1::uuid, NULL, 'test')`, [run.runId]);
    expect(await settle()).toEqual([]);
    const { rows } = await api.sql.query<{ id: string }>(
      `SELECT nifi_ops.record_api_event('ERROR', 'CLEANUP_FAILED', $1::uuid, NULL, 'test')::text AS id`,
      [run.runId],
    );
    expect(await settle()).toEqual([
      { channel: ALERT_CHANNEL, payload: rows[0]!.id },
      { channel: RUN_CHANGED_CHANNEL, payload: run.runId },
    ]);
    const orphan = await api.sql.query<{ id: string }>(
      `SELECT nifi_ops.record_api_event('WARN', 'DEPENDENCIES_NOT_READY', NULL, NULL, 'test')::text AS id`,
    );
    expect(await settle()).toEqual([{ channel: ALERT_CHANNEL, payload: orphan.rows[0]!.id }]);
  });

  it('claims and chunk reports that do not change the run status send nothing from their statements', async () => {
    const run = await startRun(api, [5, 5]);
    await settle();
    const token = randomUUID();
    // the SQL functions directly: through the API, the transaction helper adds their coalesced progress notification
    await api.sql.query(`SELECT * FROM nifi_ops.claim_partition($1, '0000', $2, 'nifi-01', 'test')`, [run.runId, token]);
    await api.sql.query(`SELECT * FROM nifi_ops.report_chunk($1, '0000', $2, 0, 2, 'f', $3, 2, 20, 'test')`, [
      run.runId,
      token,
      `${run.hdfsRunPath}/part-0000-000000.parquet`,
    ]);
    await api.sql.query(`SELECT * FROM nifi_ops.report_chunk($1, '0000', $2, 1, 2, 'f', $3, 3, 30, 'test')`, [
      run.runId,
      token,
      `${run.hdfsRunPath}/part-0000-000001.parquet`,
    ]);
    const { rows } = await api.sql.query('SELECT status FROM nifi_ops.load_partition WHERE run_id = $1 AND partition_id = $2', [
      run.runId,
      '0000',
    ]);
    expect(rows[0].status).toBe('SUCCESS');
    expect(await settle()).toEqual([]);
  });

  it('the report that completes extraction notifies once, on commit', async () => {
    const run = await startRun(api, [4]);
    const claimToken = randomUUID();
    await api.sql.query(`SELECT * FROM nifi_ops.claim_partition($1, '0000', $2, 'nifi-01', 'test')`, [run.runId, claimToken]);
    await settle();
    await api.sql.query(`SELECT * FROM nifi_ops.report_chunk($1, '0000', $2, 0, 1, 'f', $3, 4, 40, 'test')`, [
      run.runId,
      claimToken,
      `${run.hdfsRunPath}/part-0000-000000.parquet`,
    ]);
    const { rows } = await api.sql.query('SELECT status FROM nifi_ops.load_run WHERE run_id = $1', [run.runId]);
    expect(rows[0].status).toBe('EXTRACTED_VALIDATED');
    expect(await settle()).toEqual([{ channel: RUN_CHANGED_CHANNEL, payload: run.runId }]);
  });
});
