// A backfill started with pushReadiness false holds its runs' readiness decisions from readinessChanged's subscribers
// until an operator releases them; then each date's current decision is announced once (issue 28, point 1).
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { documentText } from '../../../schema/documents/graphql.js';
import * as operator from '../../../schema/documents/operator.js';
import { startTestApi, type TestApi } from '../../support/api.js';
import { CREATE_RUN, HDFS_ROOT, REGISTER_MANIFEST, START_BACKFILL, manifestInput } from '../../support/fixtures.js';
import { defineGate, observed, unique } from '../../support/gate-fixtures.js';
import { call, extractAll, publishRun, succeed, validateDispatch, validateStaging } from '../../support/ledger-flow.js';
import { subscribe } from '../../support/sse.js';

const RELEASE = documentText(operator.RELEASE_BACKFILL_READINESS);
const READINESS_CHANGED = `subscription($consumer: String!, $businessDate: Date!) {
  readinessChanged(consumer: $consumer, businessDate: $businessDate) { ready decision { version ready } } }`;
const D = '2026-06-15';

let api: TestApi;
beforeAll(async () => {
  api = await startTestApi({}, { realtime: true });
});
afterAll(async () => api?.close());

describe('readinessChanged and a backfill that holds its readiness', () => {
  it('announces nothing while the backfill holds the decision, and the decision once when it is released', async () => {
    const jobKey = unique('HELD')
      .toUpperCase()
      .replace(/[^A-Z0-9_]/g, '_');
    const consumer = unique('consumer');
    const upstream = unique('upstream');
    await defineGate(api, consumer, [jobKey, upstream]);
    await observed(api, { jobId: upstream, businessDate: D, state: 'SUCCEEDED' });
    const started = await api.gql(
      START_BACKFILL,
      { input: { jobKey, from: D, to: D, reprocess: 'MISSING', maxConcurrent: 1, pushReadiness: false } },
      { token: 'operator' },
    );
    const { backfillId } = started.body.data!.startBackfill.backfill;
    const subscription = await subscribe(api.url, READINESS_CHANGED, { consumer, businessDate: D });
    try {
      await subscription.waitFor((m) => m.data?.readinessChanged?.decision === null);
      // NiFi loads the date the backfill asked for, to SUCCESS: the date becomes ready (decision v1, held)
      const rows = [3, 4];
      const run = await call<{ runId: string; hdfsRunPath: string }>(api.gql, CREATE_RUN, {
        input: { jobKey, businessKey: D, hdfsRoot: HDFS_ROOT, stageTablePrefix: 'TMP_HELD_', idempotencyKey: randomUUID(), backfillId },
      });
      await call(api.gql, REGISTER_MANIFEST, { input: manifestInput(run.runId, rows) });
      await extractAll(api.gql, run, rows);
      await validateStaging(api.gql, run.runId, (await validateDispatch(api.gql, run.runId)).dispatchId, 7);
      await publishRun(api.gql, run.runId, 'PUBLISHED');
      await succeed(api.gql, run.runId, 7);
      // an upstream job's new attempt withdraws the date (v2, not ready: no run of the backfill in it, announced),
      // its success makes it ready again with the backfill's run in the evidence (v3, held)
      await observed(api, { jobId: upstream, businessDate: D, attempt: 2, state: 'RUNNING' });
      await subscription.waitFor((m) => m.data?.readinessChanged?.decision?.version === 2);
      await observed(api, { jobId: upstream, businessDate: D, attempt: 2, state: 'SUCCEEDED' });
      const { rows: decisions } = await api.sql.query(
        'SELECT version, ready, held_by_backfill::text FROM nifi_ops.gate_readiness_decision WHERE consumer = $1 ORDER BY version',
        [consumer],
      );
      expect(decisions).toEqual([
        { version: 1, ready: true, held_by_backfill: backfillId },
        { version: 2, ready: false, held_by_backfill: null },
        { version: 3, ready: true, held_by_backfill: backfillId },
      ]);

      const released = await api.gql(RELEASE, { input: { backfillId, reason: 'the month is complete' } }, { token: 'operator' });
      expect(released.body.data!.releaseBackfillReadiness.changed).toBe(true);
      // notices reach the stream in commit order: v1, had it been announced, would have come before v2
      await subscription.waitFor((m) => m.data?.readinessChanged?.decision?.version === 3);
      expect(subscription.messages.map((m) => m.data!.readinessChanged.decision?.version ?? null)).toEqual([null, 2, 3]);
    } finally {
      subscription.close();
    }
  });
});
