import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, type TestApi } from '../../support/api.js';
import { chunkInput, claim, completeRun, startRun, report } from '../../support/fixtures.js';

const REISSUE = `mutation($input: ReissuePartitionInput!) { reissuePartition(input: $input) { partitionStatus dispatchId } }`;

let api: TestApi;
beforeAll(async () => {
  api = await startTestApi();
});
afterAll(async () => api?.close());

function reissue(input: Record<string, unknown>, token: 'operator' | 'nifi' | 'viewer' | null = 'operator') {
  return api.gql(REISSUE, { input: { reason: 'worker node nifi-01 is gone', ...input } }, { token });
}

async function snapshot(runId: string) {
  const { rows } = await api.sql.query(
    `SELECT (SELECT json_agg(p ORDER BY partition_id) FROM (SELECT partition_id, status, claim_token, attempt_count
               FROM nifi_ops.load_partition WHERE run_id = $1) p) AS partitions,
            (SELECT count(*)::int FROM nifi_ops.load_dispatch WHERE run_id = $1) AS dispatches,
            (SELECT count(*)::int FROM nifi_ops.load_event WHERE run_id = $1) AS events,
            (SELECT count(*)::int FROM nifi_ops.load_file WHERE run_id = $1 AND status = 'WRITTEN') AS written`,
    [runId],
  );
  return rows[0];
}

describe('reissuePartition', () => {
  it("takes a RUNNING partition from its owner, invalidates its chunks and queues a reissue call, in the operator's name", async () => {
    const run = await startRun(api, [3, 4]);
    const owner = await claim(api, run.runId, '0000');
    await report(api, chunkInput(run, '0000', owner.claimToken, 0, 2, 2));

    const res = await reissue({ runId: run.runId, partitionId: '0000' });
    expect(res.status).toBe(200);
    const { partitionStatus, dispatchId } = res.body.data!.reissuePartition;
    expect(partitionStatus).toBe('RETRY');
    const {
      rows: [partition],
    } = await api.sql.query(
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
    } = await api.sql.query(`SELECT dispatch_type, partition_id, status FROM nifi_ops.load_dispatch WHERE dispatch_id = $1`, [dispatchId]);
    expect(dispatch).toEqual({ dispatch_type: 'REISSUE_PARTITION', partition_id: '0000', status: 'PENDING' });
    const { rows: events } = await api.sql.query(
      `SELECT event_level, partition_id, actor, message, details FROM nifi_ops.load_event
        WHERE run_id = $1 AND event_name = 'RECOVERY_REISSUED'`,
      [run.runId],
    );
    expect(events).toEqual([
      {
        event_level: 'WARN',
        partition_id: '0000',
        actor: 'alice-operator',
        message: 'worker node nifi-01 is gone',
        details: { from: 'RUNNING', attempt: 1, invalidatedFiles: 1, dispatchId },
      },
    ]);
    const late = await report(api, chunkInput(run, '0000', owner.claimToken, 1, 2, 1));
    expect(late.code).toBe('CLAIM_MISMATCH');
  });

  it('reissues a PENDING partition nobody claimed', async () => {
    const run = await startRun(api, [3, 4]);
    const res = await reissue({ runId: run.runId, partitionId: '0001' });
    expect(res.body.data!.reissuePartition.partitionStatus).toBe('RETRY');
    const next = await claim(api, run.runId, '0001');
    expect(next.result).toMatchObject({ claimed: true, attempt: 1 });
  });

  it('refuses partitions that are not RUNNING or PENDING with 409 PARTITION_STATUS_MISMATCH', async () => {
    const run = await startRun(api, [3, 4]);
    const done = await claim(api, run.runId, '0000');
    await report(api, chunkInput(run, '0000', done.claimToken, 0, 1, 3));
    await reissue({ runId: run.runId, partitionId: '0001' });
    const before = await snapshot(run.runId);
    for (const [partitionId, partitionStatus] of [
      ['0000', 'SUCCESS'],
      ['0001', 'RETRY'],
    ]) {
      const res = await reissue({ runId: run.runId, partitionId });
      expect(res.status).toBe(409);
      expect(res.code).toBe('PARTITION_STATUS_MISMATCH');
      expect(res.details).toEqual({ partitionStatus });
    }
    expect(await snapshot(run.runId)).toEqual(before);
  });

  it('refuses a run that is not EXTRACTING with 409 RUN_STATUS_MISMATCH', async () => {
    const run = await completeRun(api);
    const res = await reissue({ runId: run.runId, partitionId: '0000' });
    expect(res.status).toBe(409);
    expect(res.code).toBe('RUN_STATUS_MISMATCH');
    expect(res.details).toEqual({ runStatus: 'EXTRACTED_VALIDATED' });
  });

  it('answers 404 for an unknown run or partition', async () => {
    const run = await startRun(api, [3]);
    const noRun = await reissue({ runId: randomUUID(), partitionId: '0000' });
    expect([noRun.status, noRun.code]).toEqual([404, 'RUN_NOT_FOUND']);
    const noPartition = await reissue({ runId: run.runId, partitionId: '0007' });
    expect([noPartition.status, noPartition.code]).toEqual([404, 'PARTITION_NOT_FOUND']);
  });

  it('is for operators only', async () => {
    const run = await startRun(api, [3]);
    const before = await snapshot(run.runId);
    expect((await reissue({ runId: run.runId, partitionId: '0000' }, null)).status).toBe(401);
    for (const token of ['nifi', 'viewer'] as const) {
      const res = await reissue({ runId: run.runId, partitionId: '0000' }, token);
      expect([res.status, res.code]).toEqual([403, 'FORBIDDEN']);
    }
    expect(await snapshot(run.runId)).toEqual(before);
  });

  it.each([
    [{ reason: 'bad' }, 'input.reason'],
    [{ reason: 'x'.repeat(2001) }, 'input.reason'],
    [{ partitionId: '12' }, 'input.partitionId'],
  ])('refuses malformed input %o with 422 INVALID_INPUT and changes nothing', async (input, field) => {
    const run = await startRun(api, [3]);
    await claim(api, run.runId, '0000');
    const before = await snapshot(run.runId);
    const res = await reissue({ runId: run.runId, partitionId: '0000', ...input });
    expect([res.status, res.code]).toEqual([422, 'INVALID_INPUT']);
    expect(res.details).toMatchObject({ field });
    expect(await snapshot(run.runId)).toEqual(before);
  });

  it('refuses a runId that is not a UUID with 422 INVALID_INPUT', async () => {
    const res = await reissue({ runId: 'run-1', partitionId: '0000' });
    expect([res.status, res.code]).toEqual([422, 'INVALID_INPUT']);
  });

  it('lets exactly one of two concurrent reissues of a partition win (10 repetitions)', async () => {
    for (let rep = 0; rep < 10; rep++) {
      const run = await startRun(api, [3]);
      await claim(api, run.runId, '0000');
      const results = await Promise.all([
        reissue({ runId: run.runId, partitionId: '0000' }),
        reissue({ runId: run.runId, partitionId: '0000' }),
      ]);
      expect(results.map((r) => r.status).sort()).toEqual([200, 409]);
      expect(results.find((r) => r.status === 409)!.details).toEqual({ partitionStatus: 'RETRY' });
      expect((await snapshot(run.runId)).dispatches).toBe(1);
    }
  });

  it('races the completing chunk report consistently: either the reissue or the success wins (10 repetitions)', async () => {
    for (let rep = 0; rep < 10; rep++) {
      const run = await startRun(api, [3]);
      const owner = await claim(api, run.runId, '0000');
      const [reissued, reported] = await Promise.all([
        reissue({ runId: run.runId, partitionId: '0000' }),
        report(api, chunkInput(run, '0000', owner.claimToken, 0, 1, 3)),
      ]);
      const state = await snapshot(run.runId);
      const {
        rows: [row],
      } = await api.sql.query('SELECT status FROM nifi_ops.load_run WHERE run_id = $1', [run.runId]);
      if (reissued.status === 200) {
        // the reissue came first: the owner's report is refused and nothing was extracted
        expect(reported.code).toBe('CLAIM_MISMATCH');
        expect(state.partitions[0].status).toBe('RETRY');
        expect(state.written).toBe(0);
        expect(row.status).toBe('EXTRACTING');
      } else {
        expect(reissued.code).toBe('RUN_STATUS_MISMATCH');
        expect(reported.result).toMatchObject({ partitionStatus: 'SUCCESS', runStatus: 'EXTRACTED_VALIDATED' });
        expect(row.status).toBe('EXTRACTED_VALIDATED');
        expect(state.dispatches).toBe(1);
      }
    }
  });
});
