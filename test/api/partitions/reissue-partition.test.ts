// reissuePartition over HTTP: the payload, its roles and input parsing. Its rules and races are domain tests:
// test/domain/partitions/reissue-partition.test.ts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, type TestApi } from '../../support/api.js';
import { claim, partitionSnapshot, startRun } from '../../support/fixtures.js';

const REISSUE = `mutation($input: ReissuePartitionInput!) { reissuePartition(input: $input) { partitionStatus dispatchId } }`;

let api: TestApi;
beforeAll(async () => {
  api = await startTestApi();
});
afterAll(async () => api?.close());

function reissue(input: Record<string, unknown>, token: 'operator' | 'nifi' | 'viewer' | null = 'operator') {
  return api.gql(REISSUE, { input: { reason: 'worker node nifi-01 is gone', ...input } }, { token });
}

describe('reissuePartition', () => {
  it("reissues over GraphQL in the operator's name: the payload names the queued reissue call", async () => {
    const run = await startRun(api, [3, 4]);
    await claim(api, run.runId, '0000');
    const res = await reissue({ runId: run.runId, partitionId: '0000' });
    expect(res.status).toBe(200);
    const { partitionStatus, dispatchId } = res.body.data!.reissuePartition;
    expect(partitionStatus).toBe('RETRY');
    const { rows } = await api.sql.query(
      `SELECT d.dispatch_type, e.actor FROM nifi_ops.load_dispatch d
         JOIN nifi_ops.load_event e ON e.run_id = d.run_id AND e.event_name = 'RECOVERY_REISSUED'
        WHERE d.dispatch_id = $1`,
      [dispatchId],
    );
    expect(rows).toEqual([{ dispatch_type: 'REISSUE_PARTITION', actor: 'alice-operator' }]);
  });

  it('is for operators only', async () => {
    const run = await startRun(api, [3]);
    const before = await partitionSnapshot(api, run.runId);
    expect((await reissue({ runId: run.runId, partitionId: '0000' }, null)).status).toBe(401);
    for (const token of ['nifi', 'viewer'] as const) {
      const res = await reissue({ runId: run.runId, partitionId: '0000' }, token);
      expect([res.status, res.code]).toEqual([403, 'FORBIDDEN']);
    }
    expect(await partitionSnapshot(api, run.runId)).toEqual(before);
  });

  it.each([
    [{ reason: 'bad' }, 'input.reason'],
    [{ reason: 'x'.repeat(2001) }, 'input.reason'],
    [{ partitionId: '12' }, 'input.partitionId'],
  ])('refuses malformed input %o with 422 INVALID_INPUT and changes nothing', async (input, field) => {
    const run = await startRun(api, [3]);
    await claim(api, run.runId, '0000');
    const before = await partitionSnapshot(api, run.runId);
    const res = await reissue({ runId: run.runId, partitionId: '0000', ...input });
    expect([res.status, res.code]).toEqual([422, 'INVALID_INPUT']);
    expect(res.details).toMatchObject({ field });
    expect(await partitionSnapshot(api, run.runId)).toEqual(before);
  });

  it('refuses a runId that is not a UUID with 422 INVALID_INPUT', async () => {
    const res = await reissue({ runId: 'run-1', partitionId: '0000' });
    expect([res.status, res.code]).toEqual([422, 'INVALID_INPUT']);
  });
});
