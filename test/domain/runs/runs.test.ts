// createRun's and failRun's rules (ref §3.1, §3.3): the run's birth, one active run per key, idempotency keys,
// the allowed failures — performed on the database directly; the races on separate connections. The envelope,
// input parsing and the run queries are in test/api/runs/.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { perform } from '../../../src/db/operation.js';
import { listRunsEvents } from '../../../src/domain/events/events.js';
import { type CreateRunCommand, createRunOperation } from '../../../src/domain/runs/create-run.js';
import { HDFS_ROOT, JOB } from '../../support/fixtures.js';
import { ACTOR, createdRun, type DomainTest, refusal, runFailed, startDomainTest } from '../support/fixtures.js';

let t: DomainTest;
beforeAll(async () => {
  t = await startDomainTest();
});
afterAll(async () => t?.close());

const command = (overrides: Partial<CreateRunCommand> = {}): CreateRunCommand => ({
  jobKey: JOB,
  businessKey: `BK_${randomUUID().slice(0, 8)}`,
  hdfsRoot: `${HDFS_ROOT}/`,
  stageTablePrefix: 'TMP_INSP_DTL_',
  allowEmptySource: false,
  parameters: {},
  idempotencyKey: null,
  actor: ACTOR,
  ...overrides,
});
const create = (cmd: CreateRunCommand) => perform(t.db, createRunOperation, cmd);

describe('createRun', () => {
  it('creates a CREATED run with its HDFS run path and staging table, and records RUN_STARTED by token name', async () => {
    const run = await create(command({ allowEmptySource: false, parameters: { region: 'KR' } }));
    expect(run.status).toBe('CREATED');
    expect(run.created).toBe(true);
    expect(run.hdfsRunPath).toBe(`${HDFS_ROOT}/${JOB}/run_id=${run.runId}`);
    expect(run.stageTable).toBe(`tmp_insp_dtl_${run.runId.replaceAll('-', '')}`);
    const { rows } = await t.sql.query('SELECT parameters, created_by FROM nifi_ops.load_run WHERE run_id = $1', [run.runId]);
    expect(rows[0]).toEqual({ parameters: { region: 'KR', allowEmptySource: false }, created_by: 'nifi-cluster' });
    const [events] = await listRunsEvents(t.db.prisma, [run.runId], 50);
    expect(events).toEqual([expect.objectContaining({ name: 'RUN_STARTED', level: 'INFO', actor: 'nifi-cluster' })]);
  });

  it('refuses a second active run for the same job and business key with 409 DUPLICATE_ACTIVE_RUN', async () => {
    const first = await createdRun(t);
    const error = await refusal(create(command({ businessKey: first.businessKey })));
    expect([error.httpStatus, error.code]).toEqual([409, 'DUPLICATE_ACTIVE_RUN']);
    expect(error.details).toEqual({ jobKey: JOB, businessKey: first.businessKey, activeRunId: first.runId });
  });

  it('allows a new run for the key once the previous run failed', async () => {
    const first = await createdRun(t);
    const fail = await runFailed(t, first.runId);
    expect(fail).toEqual({ runId: first.runId, runStatus: 'FAILED_MANIFEST', changed: true });
    const second = await create(command({ businessKey: first.businessKey }));
    expect(second.created).toBe(true);
  });

  it('with an idempotency key returns the existing run on replay and refuses the key with other fields', async () => {
    const key = randomUUID();
    const cmd = command({ idempotencyKey: key, parameters: { a: 1, b: [1, 2] } });
    const first = await create(cmd);
    // same fields, keys of parameters in another order: still the same request
    const replay = await create({ ...cmd, parameters: { b: [1, 2], a: 1 } });
    expect(replay).toEqual({ ...first, created: false });
    const reused = await refusal(create({ ...cmd, stageTablePrefix: 'OTHER_' }));
    expect([reused.httpStatus, reused.code]).toEqual([409, 'IDEMPOTENCY_KEY_REUSED']);
    const { rows } = await t.sql.query('SELECT count(*)::int AS n FROM nifi_ops.load_run WHERE idempotency_key = $1', [key]);
    expect(rows[0].n).toBe(1);
  });

  it('answers concurrent replays of one idempotency key with one run', async () => {
    for (let rep = 0; rep < 10; rep++) {
      const cmd = command({ idempotencyKey: randomUUID() });
      const results = await Promise.all(Array.from({ length: 8 }, () => create(cmd)));
      expect(new Set(results.map((r) => r.runId)).size).toBe(1);
      expect(results.filter((r) => r.created)).toHaveLength(1);
    }
  });

  it('lets exactly one of many concurrent creates for one key win', async () => {
    for (let rep = 0; rep < 10; rep++) {
      const cmd = command();
      const results = await Promise.allSettled(Array.from({ length: 8 }, () => create(cmd)));
      expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
      const refused = results.flatMap((r) => (r.status === 'rejected' ? [r.reason] : []));
      expect(refused.filter((e) => e.code === 'DUPLICATE_ACTIVE_RUN')).toHaveLength(7);
    }
  });

  it('refuses a .. segment in hdfsRoot with 422 INVALID_HDFS_ROOT', async () => {
    const error = await refusal(create(command({ hdfsRoot: '/data/../etc' })));
    expect([error.httpStatus, error.code]).toEqual([422, 'INVALID_HDFS_ROOT']);
  });
});

describe('failRun', () => {
  it('checks the allowed pair first, then the status, and replays as changed=false', async () => {
    const run = await createdRun(t);
    const notAllowed = await refusal(runFailed(t, randomUUID(), { failStatus: 'SUCCESS', errorStage: 'X', errorCode: 'E' }));
    expect([notAllowed.httpStatus, notAllowed.code]).toEqual([422, 'FAIL_TRANSITION_NOT_ALLOWED']);
    expect(notAllowed.details).toEqual({ expectedStatus: 'CREATED', failStatus: 'SUCCESS' });

    const mismatch = await refusal(
      runFailed(t, run.runId, { expectedStatus: 'EXTRACTING', failStatus: 'FAILED_EXTRACT', errorStage: 'X', errorCode: 'E' }),
    );
    expect([mismatch.httpStatus, mismatch.code]).toEqual([409, 'RUN_STATUS_MISMATCH']);
    expect(mismatch.details).toEqual({ runStatus: 'CREATED' });

    const fail = { errorStage: 'MANIFEST', errorCode: 'E1', message: 'bad plan' };
    expect((await runFailed(t, run.runId, fail)).changed).toBe(true);
    const replay = await runFailed(t, run.runId, fail);
    expect(replay).toEqual({ runId: run.runId, runStatus: 'FAILED_MANIFEST', changed: false });
    const { rows } = await t.sql.query(
      'SELECT status, error_stage, error_code, error_message, completed_at FROM nifi_ops.load_run WHERE run_id = $1',
      [run.runId],
    );
    expect(rows[0]).toMatchObject({ status: 'FAILED_MANIFEST', error_stage: 'MANIFEST', error_code: 'E1', error_message: 'bad plan' });
    expect(rows[0].completed_at).toBeInstanceOf(Date);
  });

  it('answers 404 RUN_NOT_FOUND for an unknown run', async () => {
    const error = await refusal(runFailed(t, randomUUID(), { errorStage: 'X', errorCode: 'E' }));
    expect([error.httpStatus, error.code]).toEqual([404, 'RUN_NOT_FOUND']);
  });
});
