// A run's tags and NiFi flow version: stored by createRun, part of its idempotent request when given (and
// only then, so a request without them replays across the upgrade), found by the runs filter. Their parsing
// and the 422s are in test/api/runs/tags.test.ts.
import { createHash, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listRuns } from '../../../src/domain/runs/queries.js';
import { unique } from '../../support/gate-fixtures.js';
import { createdRun, type DomainTest, refusal, startDomainTest } from '../support/fixtures.js';

let t: DomainTest;
beforeAll(async () => {
  t = await startDomainTest();
});
afterAll(async () => t?.close());

const FLOW = { flowRegistry: 'nifi-registry-prod', flowBucket: 'loads', flowId: '0b8c-flow', flowVersion: '12' };

describe('createRun with tags and the flow version', () => {
  it('stores the tags and the flow’s coordinates on the run', async () => {
    const run = await createdRun(t, { tags: { team: 'finance', source: 'erp' }, ...FLOW });
    const { rows } = await t.sql.query(
      'SELECT tags, flow_registry, flow_bucket, flow_id, flow_version FROM nifi_ops.load_run WHERE run_id = $1',
      [run.runId],
    );
    expect(rows[0]).toEqual({
      tags: { team: 'finance', source: 'erp' },
      flow_registry: 'nifi-registry-prod',
      flow_bucket: 'loads',
      flow_id: '0b8c-flow',
      flow_version: '12',
    });
    const plain = await createdRun(t);
    const { rows: none } = await t.sql.query('SELECT tags, flow_version FROM nifi_ops.load_run WHERE run_id = $1', [plain.runId]);
    expect(none[0]).toEqual({ tags: {}, flow_version: null });
  });

  it('makes tags and the flow version part of the idempotent request: the same replays, others reuse the key', async () => {
    const idempotencyKey = randomUUID();
    const businessKey = unique('BK');
    const first = await createdRun(t, { idempotencyKey, businessKey, tags: { team: 'finance', source: 'erp' }, ...FLOW });
    const replay = await createdRun(t, { idempotencyKey, businessKey, tags: { source: 'erp', team: 'finance' }, ...FLOW });
    expect(replay).toMatchObject({ runId: first.runId, created: false });
    for (const other of [
      { tags: { team: 'sales', source: 'erp' }, ...FLOW },
      { tags: { team: 'finance', source: 'erp' }, ...FLOW, flowVersion: '13' },
    ]) {
      const error = await refusal(createdRun(t, { idempotencyKey, businessKey, ...other }));
      expect([error.httpStatus, error.code]).toEqual([409, 'IDEMPOTENCY_KEY_REUSED']);
    }
  });

  it('keeps the digest of a request without tags or flow version as it was before they existed', async () => {
    const idempotencyKey = randomUUID();
    const run = await createdRun(t, { idempotencyKey, parameters: { a: 1 } });
    const { rows } = await t.sql.query('SELECT job_key, business_key, request_digest FROM nifi_ops.load_run WHERE run_id = $1', [
      run.runId,
    ]);
    // the earlier formula: sha256 of the canonical JSON of these six fields
    const before = createHash('sha256')
      .update(
        `{"allowEmptySource":false,"businessKey":${JSON.stringify(rows[0].business_key)},"hdfsRoot":"/data/nifi/stage","jobKey":${JSON.stringify(rows[0].job_key)},"parameters":{"a":1},"stageTablePrefix":"TMP_INSP_DTL_"}`,
      )
      .digest('hex');
    expect(rows[0].request_digest).toBe(before);
  });
});

describe('runs(filter: {tags})', () => {
  it('finds the runs carrying every tag asked for', async () => {
    const team = unique('team').toLowerCase();
    const both = await createdRun(t, { tags: { team, source: 'erp' } });
    const teamOnly = await createdRun(t, { tags: { team } });
    await createdRun(t, { tags: { source: 'erp' } });
    const ids = async (tags: Record<string, string>) => (await listRuns(t.db.prisma, { tags }, 50, null)).runs.map((r) => r.runId);
    expect(await ids({ team })).toEqual([teamOnly.runId, both.runId]);
    expect(await ids({ team, source: 'erp' })).toEqual([both.runId]);
    expect(await ids({ team, source: 'crm' })).toEqual([]);
  });
});
