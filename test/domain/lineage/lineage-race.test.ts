// A run's end raced from several connections — an operator's cancel against NiFi's failRuns — while its lineage
// events are written, the window widened inside the trigger (fault point write_lineage_event): one START and one
// end per run, the end the one that won. Every other run has lineage turned on mid-run, so the trigger's
// START-if-missing races too; the others have their START already, which the end must not write again.
import pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createDb, type Db } from '../../../src/db/client.js';
import { setLineageDelivery } from '../../../src/domain/lineage/lineage-switch.js';
import { sized } from '../../support/test-size.js';
import { cancelled, runFailed, startDomainTest, startedRun, type DomainTest } from '../support/fixtures.js';

const RUNS = sized(8, 60);
const RACERS_OF_EACH_KIND = 3;

let t: DomainTest;
let racing: Db;

beforeAll(async () => {
  t = await startDomainTest();
  const admin = new pg.Client({ connectionString: t.database.url });
  await admin.connect();
  await admin.query(`ALTER DATABASE ${admin.escapeIdentifier(t.database.name)} SET load_control.fault_points = 'write_lineage_event=0.02'`);
  await admin.end();
  // new sessions only: these connections sleep at the point
  racing = createDb(t.database.url, { poolSize: 2 * RACERS_OF_EACH_KIND + 2, timeouts: t.config.database });
});
afterAll(async () => {
  await racing?.close();
  await t?.close();
});

it(`writes one START and one end per run when ${2 * RACERS_OF_EACH_KIND} connections race to end it (${RUNS} runs)`, async () => {
  const racers = { ...t, db: racing };
  for (let i = 0; i < RUNS; i++) {
    await setLineageDelivery(t.sql, i % 2 === 0);
    const run = await startedRun(t, [3]);
    await setLineageDelivery(t.sql, true);
    const answers = await Promise.allSettled(
      Array.from({ length: RACERS_OF_EACH_KIND }, () => [
        cancelled(racers, run.runId, 'race'),
        runFailed(racers, run.runId, { expectedStatus: 'EXTRACTING', failStatus: 'FAILED_EXTRACT', errorStage: 'EXTRACT' }),
      ]).flat(),
    );
    const changed = answers.filter((a) => a.status === 'fulfilled' && (a.value as { changed: boolean }).changed);
    expect(changed).toHaveLength(1);
    const { rows: runRows } = await t.sql.query(`SELECT status FROM nifi_ops.load_run WHERE run_id = $1`, [run.runId]);
    const { rows } = await t.sql.query<{ type: string; n: number }>(
      `SELECT lineage_event_type AS type, count(*)::int AS n FROM nifi_ops.load_dispatch
        WHERE run_id = $1 AND dispatch_type = 'LINEAGE_EVENT' GROUP BY 1 ORDER BY 1`,
      [run.runId],
    );
    const end = runRows[0].status === 'CANCELLED' ? 'ABORT' : 'FAIL';
    expect(rows).toEqual(
      [
        { type: 'START', n: 1 },
        { type: end, n: 1 },
      ].sort((a, b) => a.type.localeCompare(b.type)),
    );
  }
});
