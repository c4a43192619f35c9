// bulkAction over HTTP: operators only, its filter checked before the database, the cap answered 422
// BULK_LIMIT_EXCEEDED, and a dry run then an apply as the console and the CLI send them. The rules, the summary
// and the races: test/domain/operator/bulk-action.test.ts.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BULK_ACTION } from '../../../schema/documents/operator.js';
import { startTestApi, type TestApi, type TokenName } from '../../support/api.js';
import { createRun, startRun } from '../../support/fixtures.js';

let api: TestApi;
beforeAll(async () => {
  api = await startTestApi({ bulk: { maxTargets: 3 } });
});
afterAll(async () => api?.close());

const REASON = 'NiFi outage of 3 December';
const bulk = (input: Record<string, unknown>, token: TokenName = 'operator') =>
  api.gql(BULK_ACTION, { input: { action: 'CANCEL_RUNS', dryRun: true, reason: REASON, ...input } }, { token });

async function statuses(jobKey: string): Promise<string[]> {
  const { rows } = await api.sql.query(`SELECT status FROM nifi_ops.load_run WHERE job_key = $1 ORDER BY started_at`, [jobKey]);
  return rows.map((r) => r.status);
}

describe('bulkAction', () => {
  it('is for operators only; a bad filter, or a bad or missing reason for an apply, is 422 naming the field; nothing changes', async () => {
    const jobKey = `BULK_API_${randomUUID().slice(0, 8).toUpperCase()}`;
    await createRun(api, { jobKey });
    for (const token of ['nifi', 'viewer'] as const) expect((await bulk({ filter: { jobKey }, dryRun: false }, token)).status).toBe(403);
    const refusals: Array<[Record<string, unknown>, string]> = [
      [{ filter: { jobKey: 'lower' } }, 'input.filter.jobKey'],
      // the Date scalar refuses a day that is not in the calendar itself, naming its type
      [{ filter: { businessDateFrom: '2026-02-30' } }, 'Date'],
      [{ filter: { businessDateFrom: '2026-12-02', businessDateTo: '2026-12-01' } }, 'input.filter.businessDateTo'],
      [{ filter: { errorCode: '' } }, 'input.filter.errorCode'],
      [{ filter: { jobKey }, reason: 'no' }, 'input.reason'],
      [{ filter: { jobKey }, reason: null }, 'input.reason'],
    ];
    for (const [input, field] of refusals) {
      const res = await bulk({ ...input, dryRun: false });
      expect([res.status, res.code, res.details?.field], JSON.stringify(input)).toEqual([422, 'INVALID_INPUT', field]);
    }
    expect(await statuses(jobKey)).toEqual(['CREATED']);
  });

  it('refuses a filter selecting more than bulk.maxTargets with 422 BULK_LIMIT_EXCEEDED and its limit', async () => {
    const jobKey = `BULK_CAP_${randomUUID().slice(0, 8).toUpperCase()}`;
    for (let i = 0; i < 4; i++) await createRun(api, { jobKey });
    const res = await bulk({ filter: { jobKey }, dryRun: false });
    expect([res.status, res.code, res.details]).toEqual([422, 'BULK_LIMIT_EXCEEDED', { limit: 3 }]);
    expect(res.headers.get('x-error-code')).toBe('BULK_LIMIT_EXCEEDED');
    expect(await statuses(jobKey)).toEqual(['CREATED', 'CREATED', 'CREATED', 'CREATED']);
  });

  it('a dry run (no reason needed) lists the targets, the apply cancels them and answers the summary', async () => {
    const jobKey = `BULK_FLOW_${randomUUID().slice(0, 8).toUpperCase()}`;
    const runs = [await createRun(api, { jobKey }), await startRun(api, [1], { create: { jobKey } })];
    const dry = await bulk({ filter: { jobKey }, reason: null });
    expect(dry.status).toBe(200);
    expect(dry.body.data?.bulkAction).toMatchObject({ bulkActionId: null, action: 'CANCEL_RUNS', dryRun: true, limit: 3, changed: 2 });
    expect(dry.body.data?.bulkAction.targets.map((t: { runId: string }) => t.runId)).toEqual(runs.map((r) => r.runId));
    expect(await statuses(jobKey)).toEqual(['CREATED', 'EXTRACTING']);

    const applied = await bulk({ filter: { jobKey }, dryRun: false });
    expect(applied.body.data?.bulkAction).toMatchObject({ dryRun: false, changed: 2, alreadySo: 0, refused: 0, refusals: [] });
    expect(await statuses(jobKey)).toEqual(['CANCELLED', 'CANCELLED']);
    const { rows } = await api.sql.query(
      `SELECT actor FROM nifi_ops.load_event WHERE event_name = 'BULK_ACTION_APPLIED' AND details->>'bulkActionId' = $1`,
      [applied.body.data?.bulkAction.bulkActionId],
    );
    expect(rows).toEqual([{ actor: 'alice-operator' }]);
  });
});
