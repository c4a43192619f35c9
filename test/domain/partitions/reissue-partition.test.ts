// reissuePartition's rules (ref §5.2 REISSUE): the partition taken from its owner, its chunks invalidated and a
// reissue call queued, the refusals, and the races with a second reissue and with the completing chunk report —
// performed on the database directly, on separate connections. Roles and input parsing: test/api/partitions/.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { partitionSnapshot } from '../../support/fixtures.js';
import { perform } from '../../../src/db/operation.js';
import { reportChunkOperation } from '../../../src/domain/chunks/report-chunk.js';
import {
  chunk,
  claimed,
  type DomainTest,
  extractedRun,
  OPERATOR,
  refusal,
  reissued,
  startDomainTest,
  startedRun,
} from '../support/fixtures.js';

let t: DomainTest;
beforeAll(async () => {
  t = await startDomainTest();
});
afterAll(async () => t?.close());

describe('reissuePartition', () => {
  it("takes a RUNNING partition from its owner, invalidates its chunks and queues a reissue call, in the operator's name", async () => {
    const run = await startedRun(t, [3, 4]);
    const owner = await claimed(t, run.runId, '0000');
    await perform(t.db, reportChunkOperation, chunk(run, '0000', owner.claimToken, 0, 2, 2));

    const { partitionStatus, dispatchId, invalidatedFiles } = await reissued(t, run.runId, '0000');
    expect(partitionStatus).toBe('RETRY');
    expect(invalidatedFiles).toBe(1);
    const {
      rows: [partition],
    } = await t.sql.query(
      `SELECT status, claim_token, worker_node, error_code, error_message, received_chunks FROM nifi_ops.load_partition
        WHERE run_id = $1 AND partition_id = '0000'`,
      [run.runId],
    );
    expect(partition).toEqual({
      status: 'RETRY',
      claim_token: null,
      worker_node: null,
      error_code: 'OPERATOR_REISSUE',
      error_message: 'worker node nifi-01 is gone',
      received_chunks: 0,
    });
    const {
      rows: [dispatch],
    } = await t.sql.query(`SELECT dispatch_type, partition_id, status FROM nifi_ops.load_dispatch WHERE dispatch_id = $1`, [dispatchId]);
    expect(dispatch).toEqual({ dispatch_type: 'REISSUE_PARTITION', partition_id: '0000', status: 'PENDING' });
    const { rows: events } = await t.sql.query(
      `SELECT event_level, partition_id, actor, message, details FROM nifi_ops.load_event
        WHERE run_id = $1 AND event_name = 'RECOVERY_REISSUED'`,
      [run.runId],
    );
    expect(events).toEqual([
      {
        event_level: 'WARN',
        partition_id: '0000',
        actor: OPERATOR,
        message: 'worker node nifi-01 is gone',
        details: { from: 'RUNNING', attempt: 1, invalidatedFiles: 1, dispatchId },
      },
    ]);
    const late = await refusal(perform(t.db, reportChunkOperation, chunk(run, '0000', owner.claimToken, 1, 2, 1)));
    expect(late.code).toBe('CLAIM_MISMATCH');
  });

  it('reissues a PENDING partition nobody claimed', async () => {
    const run = await startedRun(t, [3, 4]);
    expect((await reissued(t, run.runId, '0001')).partitionStatus).toBe('RETRY');
    const next = await claimed(t, run.runId, '0001');
    expect(next).toMatchObject({ claimed: true, attempt: 1 });
  });

  it('refuses partitions that are not RUNNING or PENDING with 409 PARTITION_STATUS_MISMATCH', async () => {
    const run = await startedRun(t, [3, 4]);
    const done = await claimed(t, run.runId, '0000');
    await perform(t.db, reportChunkOperation, chunk(run, '0000', done.claimToken, 0, 1, 3));
    await reissued(t, run.runId, '0001');
    const before = await partitionSnapshot(t, run.runId);
    for (const [partitionId, partitionStatus] of [
      ['0000', 'SUCCESS'],
      ['0001', 'RETRY'],
    ] as const) {
      const error = await refusal(reissued(t, run.runId, partitionId));
      expect([error.httpStatus, error.code]).toEqual([409, 'PARTITION_STATUS_MISMATCH']);
      expect(error.details).toEqual({ partitionStatus });
    }
    expect(await partitionSnapshot(t, run.runId)).toEqual(before);
  });

  it('refuses a run that is not EXTRACTING with 409 RUN_STATUS_MISMATCH', async () => {
    const run = await extractedRun(t);
    const error = await refusal(reissued(t, run.runId, '0000'));
    expect([error.httpStatus, error.code]).toEqual([409, 'RUN_STATUS_MISMATCH']);
    expect(error.details).toEqual({ runStatus: 'EXTRACTED_VALIDATED' });
  });

  it('answers 404 for an unknown run or partition', async () => {
    const run = await startedRun(t, [3]);
    const noRun = await refusal(reissued(t, randomUUID(), '0000'));
    expect([noRun.httpStatus, noRun.code]).toEqual([404, 'RUN_NOT_FOUND']);
    const noPartition = await refusal(reissued(t, run.runId, '0007'));
    expect([noPartition.httpStatus, noPartition.code]).toEqual([404, 'PARTITION_NOT_FOUND']);
  });

  it('lets exactly one of two concurrent reissues of a partition win (10 repetitions)', async () => {
    for (let rep = 0; rep < 10; rep++) {
      const run = await startedRun(t, [3]);
      await claimed(t, run.runId, '0000');
      const results = await Promise.allSettled([reissued(t, run.runId, '0000'), reissued(t, run.runId, '0000')]);
      expect(results.map((r) => r.status).sort()).toEqual(['fulfilled', 'rejected']);
      const lost = results.find((r) => r.status === 'rejected')!.reason;
      expect(lost).toMatchObject({ code: 'PARTITION_STATUS_MISMATCH', details: { partitionStatus: 'RETRY' } });
      expect((await partitionSnapshot(t, run.runId)).dispatches).toBe(1);
    }
  });

  it('races the completing chunk report consistently: either the reissue or the success wins (10 repetitions)', async () => {
    for (let rep = 0; rep < 10; rep++) {
      const run = await startedRun(t, [3]);
      const owner = await claimed(t, run.runId, '0000');
      const [reissue, reported] = await Promise.allSettled([
        reissued(t, run.runId, '0000'),
        perform(t.db, reportChunkOperation, chunk(run, '0000', owner.claimToken, 0, 1, 3)),
      ]);
      const state = await partitionSnapshot(t, run.runId);
      const {
        rows: [row],
      } = await t.sql.query('SELECT status FROM nifi_ops.load_run WHERE run_id = $1', [run.runId]);
      if (reissue.status === 'fulfilled') {
        // the reissue came first: the owner's report is refused and nothing was extracted
        expect(reported).toMatchObject({ status: 'rejected', reason: { code: 'CLAIM_MISMATCH' } });
        expect(state.partitions[0].status).toBe('RETRY');
        expect(state.written).toBe(0);
        expect(row.status).toBe('EXTRACTING');
      } else {
        expect(reissue.reason).toMatchObject({ code: 'RUN_STATUS_MISMATCH' });
        expect(reported).toMatchObject({ status: 'fulfilled', value: { partitionStatus: 'SUCCESS', runStatus: 'EXTRACTED_VALIDATED' } });
        expect(row.status).toBe('EXTRACTED_VALIDATED');
        expect(state.dispatches).toBe(1);
      }
    }
  });
});
