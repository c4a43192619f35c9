// Never more than maxConcurrent dates of a backfill at once (issue 28, point 1), while several pumps advance it at
// the same moment from connections of their own — as every worker's backfill pump does. A fault point holds each
// advance between counting the active dates and starting the next ones, so that an advance not serialised by the
// backfill row's lock would start dates on a count that another one has already made wrong.
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDb, type Db } from '../../../src/db/client.js';
import { perform } from '../../../src/db/operation.js';
import { advanceBackfillOperation } from '../../../src/domain/backfills/advance-backfill.js';
import { startBackfillOperation } from '../../../src/domain/backfills/start-backfill.js';
import { pauseJobOperation, resumeJobOperation } from '../../../src/domain/jobs/job-pause.js';
import { cancelled, createdRun, type DomainTest, OPERATOR, startDomainTest } from '../support/fixtures.js';

const REPETITIONS = Number(process.env.BACKFILL_RACE_REPETITIONS ?? 3);
const PUMPS = 4;
const MAX_CONCURRENT = 3;
const DATES = 9;
// each pump a little after the one before: within the fault point's window of the ones before it
const STAGGER_MS = 10;

let t: DomainTest;
let pumps: Db[];
beforeAll(async () => {
  t = await startDomainTest();
  const admin = new pg.Client({ connectionString: t.database.url });
  await admin.connect();
  await admin.query(
    `ALTER DATABASE ${admin.escapeIdentifier(t.database.name)} SET load_control.fault_points = 'advance_backfill_counted=0.05'`,
  );
  await admin.end();
  pumps = Array.from({ length: PUMPS }, () => createDb(t.database.url, { poolSize: 1 }));
});
afterAll(async () => {
  await Promise.all((pumps ?? []).map((db) => db.close()));
  await t?.close();
});

async function dateStatuses(backfillId: string): Promise<string[]> {
  const { rows } = await t.sql.query<{ business_date: string; status: string }>(
    `SELECT to_char(business_date, 'YYYY-MM-DD') AS business_date, status FROM nifi_ops.load_backfill_date
      WHERE backfill_id = $1 ORDER BY position`,
    [backfillId],
  );
  return rows.map((r) => `${r.business_date} ${r.status}`);
}

describe('several pumps advancing one backfill at once', () => {
  it(`keep at most ${MAX_CONCURRENT} of its dates active, and start each date once`, async () => {
    for (let rep = 0; rep < REPETITIONS; rep++) {
      const jobKey = `RACE_JOB_${randomUUID().slice(0, 8).toUpperCase()}`;
      const { backfill } = await perform(t.db, startBackfillOperation, {
        jobKey,
        from: '2026-08-01',
        to: `2026-08-${String(DATES).padStart(2, '0')}`,
        reprocess: 'MISSING',
        order: 'OLDEST_FIRST',
        maxConcurrent: MAX_CONCURRENT,
        pushReadiness: true,
        actor: OPERATOR,
      });
      let rounds = 0;
      for (;;) {
        const statuses = await dateStatuses(backfill.backfillId);
        const active = statuses.filter((s) => s.endsWith('STARTING') || s.endsWith('RUNNING'));
        expect(active.length, statuses.join(', ')).toBeLessThanOrEqual(MAX_CONCURRENT);
        if (active.length === 0) break;
        // NiFi starts and ends every started date while the job is paused for a moment, so one advance settles them
        // and starts nothing; once the job is resumed, every pump advances the backfill at nearly the same moment
        for (const date of active) {
          const run = await createdRun(t, { jobKey, businessKey: date.slice(0, 10), backfillId: backfill.backfillId });
          await cancelled(t, run.runId);
        }
        await perform(t.db, pauseJobOperation, { jobKey, reason: 'race test pause', actor: OPERATOR });
        expect((await perform(t.db, advanceBackfillOperation, { backfillId: backfill.backfillId, actor: 'settler' }))?.started).toEqual([]);
        await perform(t.db, resumeJobOperation, { jobKey, reason: 'race test resume', actor: OPERATOR });
        await Promise.all(
          pumps.map(async (db, i) => {
            await new Promise((resolve) => setTimeout(resolve, i * STAGGER_MS));
            return perform(db, advanceBackfillOperation, { backfillId: backfill.backfillId, actor: `pump-${i}` });
          }),
        );
        rounds += 1;
      }
      expect(rounds).toBe(DATES / MAX_CONCURRENT);
      const { rows } = await t.sql.query<{ calls: number; dates: number }>(
        `SELECT count(*)::int AS calls, count(DISTINCT business_date)::int AS dates FROM nifi_ops.load_dispatch
          WHERE dispatch_type = 'START_LOAD' AND backfill_id = $1`,
        [backfill.backfillId],
      );
      expect(rows[0]).toEqual({ calls: DATES, dates: DATES });
      const { rows: status } = await t.sql.query('SELECT status FROM nifi_ops.load_backfill WHERE backfill_id = $1', [backfill.backfillId]);
      expect(status[0].status).toBe('COMPLETED');
    }
  });
});
