// Pausing a job (issue 28, point 3): pauseJob / resumeJob and their replays, createRun's JOB_PAUSED refusal that
// changes nothing, the audit, and the race of a pause against createRuns from several connections.
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDb, type Db } from '../../../src/db/client.js';
import { perform } from '../../../src/db/operation.js';
import { pauseJobOperation, resumeJobOperation } from '../../../src/domain/jobs/job-pause.js';
import { createRunOperation, type CreateRunCommand } from '../../../src/domain/runs/create-run.js';
import { HDFS_ROOT } from '../../support/fixtures.js';
import { ACTOR, type DomainTest, OPERATOR, refusal, startDomainTest } from '../support/fixtures.js';

let t: DomainTest;
beforeAll(async () => {
  t = await startDomainTest();
});
afterAll(async () => t?.close());

const newJob = () => `PAUSED_JOB_${randomUUID().slice(0, 8).toUpperCase()}`;
const pause = (jobKey: string, reason = 'maintenance window on the source', db: Db = t.db) =>
  perform(db, pauseJobOperation, { jobKey, reason, actor: OPERATOR });
const resume = (jobKey: string, reason = 'maintenance window is over') =>
  perform(t.db, resumeJobOperation, { jobKey, reason, actor: OPERATOR });

function createCommand(jobKey: string, businessKey: string): CreateRunCommand {
  return {
    jobKey,
    businessKey,
    hdfsRoot: HDFS_ROOT,
    stageTablePrefix: 'TMP_',
    allowEmptySource: false,
    parameters: {},
    idempotencyKey: null,
    actor: ACTOR,
  };
}

async function runsOf(jobKey: string): Promise<number> {
  const { rows } = await t.sql.query<{ n: number }>('SELECT count(*)::int AS n FROM nifi_ops.load_run WHERE job_key = $1', [jobKey]);
  return rows[0]!.n;
}

async function jobEvents(jobKey: string) {
  const { rows } = await t.sql.query(
    `SELECT event_name, actor, message, details FROM nifi_ops.load_event WHERE job_key = $1 AND run_id IS NULL ORDER BY event_time`,
    [jobKey],
  );
  return rows;
}

describe('pauseJob and resumeJob', () => {
  it('pauses a job it has never seen (its row is made), records who, why and since when, and replays as changed: false', async () => {
    const jobKey = newJob();
    const paused = await pause(jobKey);
    expect(paused).toMatchObject({
      changed: true,
      job: { jobKey, paused: true, pausedBy: OPERATOR, pauseReason: 'maintenance window on the source' },
    });
    expect(paused.job.pausedAt).toBeInstanceOf(Date);
    const again = await pause(jobKey, 'another reason, same pause');
    expect(again).toEqual({ changed: false, job: paused.job });
    expect(await jobEvents(jobKey)).toEqual([
      {
        event_name: 'JOB_PAUSED',
        actor: OPERATOR,
        message: 'maintenance window on the source',
        details: { reason: 'maintenance window on the source' },
      },
    ]);
  });

  it('refuses createRun while paused with JOB_PAUSED and its details, creating nothing; a resume lets it through', async () => {
    const jobKey = newJob();
    const { job } = await pause(jobKey);
    const error = await refusal(perform(t.db, createRunOperation, createCommand(jobKey, '2026-11-01')));
    expect(error.code).toBe('JOB_PAUSED');
    expect(error.httpStatus).toBe(409);
    expect(error.details).toEqual({
      jobKey,
      pausedAt: job.pausedAt!.toISOString(),
      pausedBy: OPERATOR,
      reason: 'maintenance window on the source',
    });
    expect(await runsOf(jobKey)).toBe(0);

    const resumed = await resume(jobKey);
    expect(resumed).toEqual({ changed: true, job: { jobKey, paused: false, pausedAt: null, pausedBy: null, pauseReason: null } });
    expect(await resume(jobKey)).toEqual({ changed: false, job: resumed.job });
    expect((await perform(t.db, createRunOperation, createCommand(jobKey, '2026-11-01'))).created).toBe(true);
    expect((await jobEvents(jobKey)).map((e) => [e.event_name, e.actor, e.details.reason])).toEqual([
      ['JOB_PAUSED', OPERATOR, 'maintenance window on the source'],
      ['JOB_RESUMED', OPERATOR, 'maintenance window is over'],
    ]);
  });

  it('answers a replay of a run created before the pause with that run, not JOB_PAUSED; loads under way go on', async () => {
    const jobKey = newJob();
    const idempotencyKey = randomUUID();
    const run = await perform(t.db, createRunOperation, { ...createCommand(jobKey, '2026-11-02'), idempotencyKey });
    await pause(jobKey);
    const replay = await perform(t.db, createRunOperation, { ...createCommand(jobKey, '2026-11-02'), idempotencyKey });
    expect(replay).toMatchObject({ runId: run.runId, created: false });
    const duplicate = await refusal(perform(t.db, createRunOperation, createCommand(jobKey, '2026-11-02')));
    expect(duplicate.code).toBe('DUPLICATE_ACTIVE_RUN');
  });

  it('pauses one job only', async () => {
    const [paused, other] = [newJob(), newJob()];
    await pause(paused);
    expect((await perform(t.db, createRunOperation, createCommand(other, '2026-11-03'))).created).toBe(true);
  });
});

describe('a pause racing createRuns on several connections', () => {
  const REPETITIONS = Number(process.env.PAUSE_RACE_REPETITIONS ?? 8);
  const CREATORS = 4;
  let creators: Db[];
  let pauser: Db;

  beforeAll(async () => {
    // every new session holds createRun's job check open a little: a pause that did not wait for it would commit first
    const admin = new pg.Client({ connectionString: t.database.url });
    await admin.connect();
    await admin.query(
      `ALTER DATABASE ${admin.escapeIdentifier(t.database.name)} SET load_control.fault_points = 'create_run_job_checked=0.05'`,
    );
    await admin.end();
    creators = Array.from({ length: CREATORS }, () => createDb(t.database.url, { poolSize: 2 }));
    pauser = createDb(t.database.url, { poolSize: 1 });
  });
  afterAll(async () => {
    await Promise.all([...(creators ?? []), pauser].map((db) => db?.close()));
  });

  it('creates a run before the pause commits or refuses it after, never one a createRun made having seen the pause', async () => {
    const outcomes = { created: 0, refused: 0 };
    for (let rep = 0; rep < REPETITIONS; rep++) {
      const jobKey = newJob();
      const creations = creators.map((db, i) =>
        perform(db, createRunOperation, createCommand(jobKey, `2026-10-${String(i + 1).padStart(2, '0')}`)).then(
          () => 'created' as const,
          (error: { code?: string }) => error.code,
        ),
      );
      // the pause arrives while the first createRuns are inside their transactions
      await new Promise((resolve) => setTimeout(resolve, 20));
      await pause(jobKey, 'race test pause', pauser);
      // what the ledger holds once the pause committed: a createRun that saw no pause but committed later would add a run
      const atPause = await runsOf(jobKey);
      const answers = await Promise.all(creations);
      expect(answers.every((a) => a === 'created' || a === 'JOB_PAUSED')).toBe(true);
      const created = answers.filter((a) => a === 'created').length;
      expect(await runsOf(jobKey)).toBe(atPause);
      expect(created).toBe(atPause);
      outcomes.created += created;
      outcomes.refused += answers.length - created;
    }
    // both sides of the race happened
    expect(outcomes.created).toBeGreaterThan(0);
    expect(outcomes.refused).toBeGreaterThan(0);
  });
});
