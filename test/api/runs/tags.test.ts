// Tags and the flow version over HTTP: createRun's `tags` written key=value[,key=value…] and the flow's registry
// coordinates, shown on the run, searched by runs(filter: {tags}); malformed tags are a 422 naming the field,
// and nothing is created. Storage, the request digest and the filter's rule are domain tests (test/domain/runs/tags.test.ts).
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, type TestApi } from '../../support/api.js';
import { CREATE_RUN, HDFS_ROOT, JOB, createRun } from '../../support/fixtures.js';

let api: TestApi;
beforeAll(async () => {
  api = await startTestApi();
});
afterAll(async () => api?.close());

const RUN = `query($runId: UUID!) { run(runId: $runId) { tags { key value } flowRegistry flowBucket flowId flowVersion } }`;
const RUNS_TAGGED = `query($tags: String) { runs(filter: { tags: $tags }, first: 50) { nodes { runId tags { key value } } } }`;

describe('createRun with tags and the flow version', () => {
  it('stores them and shows them on the run, tags in key order', async () => {
    const run = await createRun(api, {
      tags: ' team=finance , source=erp:INSP.DTL ',
      flowRegistry: 'nifi-registry-prod',
      flowBucket: 'loads',
      flowId: 'a1b2c3',
      flowVersion: '12',
    });
    const res = await api.gql(RUN, { runId: run.runId }, { token: 'viewer' });
    expect(res.body.data!.run).toEqual({
      tags: [
        { key: 'source', value: 'erp:INSP.DTL' },
        { key: 'team', value: 'finance' },
      ],
      flowRegistry: 'nifi-registry-prod',
      flowBucket: 'loads',
      flowId: 'a1b2c3',
      flowVersion: '12',
    });
  });

  it('refuses malformed tags and flow fields with 422 INVALID_INPUT naming the field, creating nothing', async () => {
    const businessKey = `BK_${randomUUID().slice(0, 8)}`;
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ tags: 'team' }, 'input.tags'],
      [{ tags: 'Team=finance' }, 'input.tags'],
      [{ tags: 'team=fin ance' }, 'input.tags'],
      [{ tags: 'team="x"' }, 'input.tags'],
      [{ tags: 'team=a,team=b' }, 'input.tags'],
      [{ tags: Array.from({ length: 11 }, (_, i) => `k${i}=v`).join(',') }, 'input.tags'],
      [{ tags: `team=${'v'.repeat(101)}` }, 'input.tags'],
      [{ flowVersion: 'v'.repeat(101) }, 'input.flowVersion'],
      [{ flowId: '' }, 'input.flowId'],
    ];
    for (const [extra, field] of cases) {
      const res = await api.gql(CREATE_RUN, {
        input: { jobKey: JOB, businessKey, hdfsRoot: HDFS_ROOT, stageTablePrefix: 'TMP_T_', ...extra },
      });
      expect([JSON.stringify(extra).slice(0, 40), res.status, res.code, res.details?.field]).toEqual([
        JSON.stringify(extra).slice(0, 40),
        422,
        'INVALID_INPUT',
        field,
      ]);
    }
    const { rows } = await api.sql.query('SELECT count(*)::int AS n FROM nifi_ops.load_run WHERE business_key = $1', [businessKey]);
    expect(rows[0].n).toBe(0);
  });
});

describe('runs(filter: {tags})', () => {
  it('lists the runs carrying every tag given, and refuses a malformed filter with 422', async () => {
    const owner = `team${randomUUID().slice(0, 6)}`;
    const both = await createRun(api, { tags: `owner=${owner},source=erp` });
    const one = await createRun(api, { tags: `owner=${owner}` });
    const ids = async (tags: string) =>
      ((await api.gql(RUNS_TAGGED, { tags }, { token: 'viewer' })).body.data!.runs.nodes as Array<{ runId: string }>).map((r) => r.runId);
    expect(await ids(`owner=${owner}`)).toEqual([one.runId, both.runId]);
    expect(await ids(`source=erp,owner=${owner}`)).toEqual([both.runId]);
    const bad = await api.gql(RUNS_TAGGED, { tags: 'owner' }, { token: 'viewer' });
    expect([bad.status, bad.code, bad.details?.field]).toEqual([422, 'INVALID_INPUT', 'args.filter.tags']);
  });
});
