// OpenLineage run events end to end, and checked by the standard: runs through the API, the worker's sweeper and
// dispatcher, a loopback receiver in Marquez's POST /api/v1/lineage place — then every event it received checked by
// OpenLineage's own artifacts on a JVM (test/support/openlineage-validator.ts). Which calls the ledger writes, and
// when: test/domain/lineage/.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Config } from '../../src/config/config.js';
import { startTestApi, type TestApi } from '../support/api.js';
import {
  CANCEL_RUN,
  createRun,
  FAIL_RUN,
  JOB,
  MARK_SUCCESS,
  START_BACKFILL,
  metric,
  recordMetrics,
  startRun,
  toPublished,
  toPublishUnknown,
} from '../support/fixtures.js';
import { RESEND_DISPATCH, RESOLVE_UNKNOWN } from '../support/ledger-flow.js';
import { validateOpenLineageEvents } from '../support/openlineage-validator.js';
import { startReceiver, type ReceivedCall, type Receiver } from '../support/receiver.js';
import { testWorker, workerConfig, type TestWorkerParts } from '../support/worker.js';

const SECRET = 'Bearer marquez-api-key';
const SOURCE_TABLE = 'INSP.INSP_DTL';

let api: TestApi;
let nifi: Receiver;
let marquez: Receiver;
let worker: TestWorkerParts;
const others: TestWorkerParts[] = [];
/** Every event body a receiver answered 2xx to, by dispatch id: what the validator checks at the end. */
const delivered = new Map<string, Record<string, unknown>>();

function lineageConfig(url: string, overrides: Partial<Config['nifi']> = {}, lineage: Partial<Config['lineage']> = {}): Config {
  const base = workerConfig(api, nifi, { dispatch: { backoffMin: 1, backoffMax: 1, maxAttempts: 5 }, nifi: overrides });
  return {
    ...base,
    lineage: {
      enabled: true,
      url,
      namespace: 'load-control-test',
      producer: 'urn:load-control',
      headers: { Authorization: SECRET },
      jobs: {
        [JOB]: {
          source: 'oracle://oracle.example.com:1521/ORCLPDB1',
          sourceTable: null,
          target: 'hive://metastore.example.com:9083',
          targetTable: 'dw.insp_dtl',
          partitionColumn: 'business_date',
        },
      },
      ...lineage,
    },
  };
}

function otherWorker(config: Config): TestWorkerParts {
  const w = testWorker(api, config);
  others.push(w);
  return w;
}

interface LineageRow {
  dispatch_id: string;
  run_id: string;
  event_type: string;
  status: string;
  attempt_count: number;
  last_error: string | null;
}

async function lineageRows(runIds: string[]): Promise<LineageRow[]> {
  const { rows } = await api.sql.query<LineageRow>(
    `SELECT dispatch_id::text, run_id::text, lineage_event_type AS event_type, status, attempt_count, last_error
       FROM nifi_ops.load_dispatch WHERE dispatch_type = 'LINEAGE_EVENT' AND run_id = ANY($1::uuid[]) ORDER BY created_at`,
    [runIds],
  );
  return rows;
}

/** Runs the dispatcher's passes until no lineage call is due (each retry is due 1 ms later); at most `passes`. */
async function drain(w: TestWorkerParts, passes = 20): Promise<void> {
  for (let i = 0; i < passes; i++) {
    await w.dispatcher.dispatchOnce();
    const { rows } = await api.sql.query(
      `SELECT count(*)::int AS n FROM nifi_ops.load_dispatch WHERE dispatch_type = 'LINEAGE_EVENT' AND status = 'PENDING'`,
    );
    if (rows[0].n === 0) return;
  }
}

/** The receiver's 2xx answers, recorded for validation; the calls for one dispatch, in order. */
function callsOf(receiver: Receiver, dispatchId: string): ReceivedCall[] {
  return receiver.callsFor(dispatchId);
}

/** Answers 500 to the first two calls of each dispatch, 200 after: every event needs three tries. */
function failTwiceThenAccept(receiver: Receiver): void {
  receiver.replyBy((call) => {
    const tries = receiver.callsFor(String(call.headers['x-dispatch-id'])).length;
    if (tries > 2) delivered.set(String(call.headers['x-dispatch-id']), call.body);
    return tries <= 2 ? 500 : 200;
  });
}

function acceptAll(receiver: Receiver): void {
  receiver.replyBy((call) => {
    delivered.set(String(call.headers['x-dispatch-id']), call.body);
    return 200;
  });
}

beforeAll(async () => {
  api = await startTestApi();
  [nifi, marquez] = await Promise.all([startReceiver(), startReceiver()]);
  worker = testWorker(api, lineageConfig(`${marquez.url}api/v1/lineage`));
  // the first cycle turns lineage on in the database: the runs' moves write their events from now on
  await worker.sweeper.cycle();
});
afterAll(async () => {
  await Promise.all([worker, ...others].map((w) => w?.close()));
  await Promise.all([nifi?.close(), marquez?.close()]);
  await api?.close();
});

describe('OpenLineage events through the outbox', () => {
  it('delivers START/COMPLETE, START/FAIL and START/ABORT exactly once each to a receiver that answers 500 twice first', async () => {
    marquez.reset();
    failTwiceThenAccept(marquez);
    const parameters = { sourceTable: SOURCE_TABLE };
    const success = await toPublished(api, [3, 4], { create: { businessKey: '2026-10-01', parameters } });
    expect((await recordMetrics(api, success.runId, 'TARGET', [metric('TARGET_COUNT', 'PASS', '7')])).body.errors).toBeUndefined();
    expect((await api.gql(MARK_SUCCESS, { input: { runId: success.runId, targetCount: 7 } })).body.data?.markSuccess.runStatus).toBe(
      'SUCCESS',
    );
    const failed = await startRun(api, [3], { create: { businessKey: '2026-10-02', parameters } });
    const failure = await api.gql(FAIL_RUN, {
      input: {
        runId: failed.runId,
        expectedStatus: 'EXTRACTING',
        failStatus: 'FAILED_EXTRACT',
        errorStage: 'EXTRACT',
        errorCode: 'ORA-03113',
        message: 'end-of-file on communication channel',
      },
    });
    expect(failure.body.data?.failRun.changed).toBe(true);
    const aborted = await startRun(api, [3], { create: { businessKey: '2026-10-03', parameters } });
    const cancel = await api.gql(CANCEL_RUN, { input: { runId: aborted.runId, reason: 'wrong source' } }, { token: 'operator' });
    expect(cancel.body.data?.cancelRun.runStatus).toBe('CANCELLED');

    await drain(worker);
    const runIds = [success.runId, failed.runId, aborted.runId];
    const rows = await lineageRows(runIds);
    expect(rows.map((r) => [runIds.indexOf(r.run_id), r.event_type, r.status, r.attempt_count])).toEqual([
      [0, 'START', 'ACKED', 3],
      [0, 'COMPLETE', 'ACKED', 3],
      [1, 'START', 'ACKED', 3],
      [1, 'FAIL', 'ACKED', 3],
      [2, 'START', 'ACKED', 3],
      [2, 'ABORT', 'ACKED', 3],
    ]);
    for (const row of rows) {
      const calls = callsOf(marquez, row.dispatch_id);
      // three tries, the last accepted: delivered once, each try the same event
      expect(calls).toHaveLength(3);
      for (const call of calls) {
        expect(call.path).toBe('/nifi-control/api/v1/lineage');
        expect(call.headers.authorization).toBe(SECRET);
        expect(call.headers['content-type']).toBe('application/json');
        expect(call.body).toEqual(calls[0]!.body);
      }
      expect(calls[0]!.body).toMatchObject({
        eventType: row.event_type,
        run: { runId: row.run_id },
        job: { namespace: 'load-control-test', name: JOB },
      });
    }
    expect(marquez.calls).toHaveLength(18);

    const event = (runId: string, type: string) =>
      delivered.get(rows.find((r) => r.run_id === runId && r.event_type === type)!.dispatch_id)!;
    const complete = event(success.runId, 'COMPLETE');
    const { rows: scn } = await api.sql.query(`SELECT snapshot_scn::text FROM nifi_ops.load_run WHERE run_id = $1`, [success.runId]);
    expect(complete).toMatchObject({
      producer: 'urn:load-control',
      schemaURL: 'https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent',
      run: {
        facets: {
          nominalTime: { nominalStartTime: '2026-10-01T00:00:00Z', nominalEndTime: '2026-10-02T00:00:00Z' },
          loadControl_run: { businessKey: '2026-10-01', status: 'SUCCESS' },
        },
      },
      inputs: [
        {
          namespace: 'oracle://oracle.example.com:1521',
          name: `ORCLPDB1.${SOURCE_TABLE}`,
          facets: { version: { datasetVersion: scn[0].snapshot_scn } },
          inputFacets: {
            inputStatistics: { rowCount: 7 },
            dataQualityMetrics: { rowCount: 7, columnMetrics: {} },
            dataQualityAssertions: { assertions: expect.arrayContaining([{ assertion: 'TARGET.TARGET_COUNT', success: true }]) },
          },
        },
      ],
      outputs: [
        {
          namespace: 'hive://metastore.example.com:9083',
          name: 'dw.insp_dtl',
          facets: { loadControl_partition: { column: 'business_date', value: '2026-10-01' } },
          outputFacets: { outputStatistics: { rowCount: 7 } },
        },
      ],
    });
    expect(event(failed.runId, 'FAIL')).toMatchObject({
      run: {
        facets: {
          errorMessage: { message: 'EXTRACT: ORA-03113: end-of-file on communication channel', programmingLanguage: 'TypeScript' },
        },
      },
    });
    expect(event(aborted.runId, 'ABORT')).toMatchObject({ run: { facets: { loadControl_run: { status: 'CANCELLED' } } } });
    // a START says what the manifest said, nothing of the end
    expect(event(success.runId, 'START')).not.toHaveProperty('outputs.0.outputFacets.outputStatistics');
  });

  it('sends the resolution of PUBLISH_UNKNOWN as a RUNNING event', async () => {
    marquez.reset();
    acceptAll(marquez);
    const run = await toPublishUnknown(api);
    const resolved = await api.gql(
      RESOLVE_UNKNOWN,
      { input: { runId: run.runId, resolution: 'PUBLISHED', reason: 'the partition is in the metastore' } },
      { token: 'operator' },
    );
    expect(resolved.body.data?.resolveUnknown.runStatus).toBe('PUBLISHED');
    await drain(worker);
    const rows = await lineageRows([run.runId]);
    expect(rows.map((r) => [r.event_type, r.status])).toEqual([
      ['START', 'ACKED'],
      ['RUNNING', 'ACKED'],
    ]);
    expect(delivered.get(rows[1]!.dispatch_id)).toMatchObject({
      eventType: 'RUNNING',
      run: { runId: run.runId, facets: { loadControl_run: { status: 'PUBLISHED', resolvedFrom: 'PUBLISH_UNKNOWN' } } },
    });
  });

  it('sends a job that lineage.jobs does not name without datasets, and a business key that is no date without nominalTime', async () => {
    marquez.reset();
    acceptAll(marquez);
    const run = await createRun(api, { jobKey: 'ORACLE_UNMAPPED_DAILY', businessKey: 'BATCH_0042' });
    const failure = await api.gql(FAIL_RUN, {
      input: { runId: run.runId, expectedStatus: 'CREATED', failStatus: 'FAILED_MANIFEST', errorStage: 'MANIFEST', errorCode: 'BAD_PLAN' },
    });
    expect(failure.body.data?.failRun.changed).toBe(true);
    await drain(worker);
    const rows = await lineageRows([run.runId]);
    expect(rows.map((r) => [r.event_type, r.status])).toEqual([
      ['START', 'ACKED'],
      ['FAIL', 'ACKED'],
    ]);
    const fail = delivered.get(rows[1]!.dispatch_id)!;
    expect(fail).toMatchObject({ job: { name: 'ORACLE_UNMAPPED_DAILY' }, inputs: [], outputs: [] });
    expect(fail).not.toHaveProperty('run.facets.nominalTime');
    expect(fail).toHaveProperty('run.facets.errorMessage.message', 'MANIFEST: BAD_PLAN');
  });

  it('names the backfill that started a run as its parent, and the NiFi flow that created it as the job’s source location', async () => {
    marquez.reset();
    acceptAll(marquez);
    const started = await api.gql<{ startBackfill: { backfill: { backfillId: string } } }>(
      START_BACKFILL,
      {
        input: {
          jobKey: 'ORACLE_LINEAGE_BACKFILL',
          from: '2026-09-01',
          to: '2026-09-01',
          reprocess: 'ALL',
          maxConcurrent: 1,
          order: 'OLDEST_FIRST',
          pushReadiness: true,
        },
      },
      { token: 'operator' },
    );
    const { backfillId } = started.body.data!.startBackfill.backfill;
    const flow = { flowRegistry: 'nifi-registry-prod', flowBucket: 'loads', flowId: 'c0ffee00-flow', flowVersion: '12' };
    const run = await createRun(api, { businessKey: '2026-09-01', ...flow });
    // the backfill's own START_LOAD call and createRun carrying it are backfills.test.ts's: the run is marked its here
    await api.sql.query('UPDATE nifi_ops.load_run SET backfill_id = $1 WHERE run_id = $2', [backfillId, run.runId]);
    const failure = await api.gql(FAIL_RUN, {
      input: { runId: run.runId, expectedStatus: 'CREATED', failStatus: 'FAILED_MANIFEST', errorStage: 'MANIFEST', errorCode: 'BAD_PLAN' },
    });
    expect(failure.body.data?.failRun.changed).toBe(true);
    await drain(worker);
    const rows = await lineageRows([run.runId]);
    expect(rows.map((r) => [r.event_type, r.status])).toEqual([
      ['START', 'ACKED'],
      ['FAIL', 'ACKED'],
    ]);
    for (const row of rows) {
      const event = delivered.get(row.dispatch_id)!;
      expect(event).toHaveProperty('run.facets.parent.run', { runId: backfillId });
      expect(event).toHaveProperty('run.facets.parent.job', { namespace: 'load-control-test', name: 'ORACLE_INSP_DTL_DAILY.backfill' });
      expect(event).toHaveProperty('job.facets.sourceCodeLocation.type', 'nifi-registry');
      expect(event).toHaveProperty(
        'job.facets.sourceCodeLocation.url',
        'nifi-registry://nifi-registry-prod/buckets/loads/flows/c0ffee00-flow/versions/12',
      );
      expect(event).toHaveProperty('job.facets.sourceCodeLocation.version', '12');
    }
  });

  it('retries a receiver that is down until the call is DEAD; an operator resends it and it is delivered once', async () => {
    marquez.reset();
    acceptAll(marquez);
    const down = await startReceiver();
    const downUrl = `${down.url}api/v1/lineage`;
    await down.close();
    const config = lineageConfig(downUrl);
    const failing = otherWorker({ ...config, dispatch: { ...config.dispatch, maxAttempts: 2 } });
    const run = await createRun(api, { businessKey: '2026-10-04', parameters: { sourceTable: SOURCE_TABLE } });
    const cancel = await api.gql(CANCEL_RUN, { input: { runId: run.runId, reason: 'not today' } }, { token: 'operator' });
    expect(cancel.body.errors).toBeUndefined();
    await drain(failing);
    const dead = await lineageRows([run.runId]);
    expect(dead.map((r) => [r.event_type, r.status, r.attempt_count])).toEqual([
      ['START', 'DEAD', 2],
      ['ABORT', 'DEAD', 2],
    ]);
    expect(dead[0]!.last_error).toMatch(/^max attempts reached: .*ECONNREFUSED/);
    const { rows: events } = await api.sql.query(
      `SELECT details->>'type' AS type FROM nifi_ops.load_event WHERE run_id = $1 AND event_name = 'DISPATCH_DEAD'`,
      [run.runId],
    );
    expect(events).toEqual([{ type: 'LINEAGE_EVENT' }, { type: 'LINEAGE_EVENT' }]);
    expect(marquez.calls).toEqual([]);

    for (const row of dead) {
      const resent = await api.gql(RESEND_DISPATCH, { input: { runId: run.runId, dispatchId: row.dispatch_id } }, { token: 'operator' });
      expect(resent.body.data?.resendDispatch).toEqual({ dispatchId: row.dispatch_id, status: 'PENDING' });
    }
    await drain(worker);
    const after = await lineageRows([run.runId]);
    expect(after.map((r) => [r.event_type, r.status])).toEqual([
      ['START', 'ACKED'],
      ['ABORT', 'ACKED'],
    ]);
    for (const row of after) expect(callsOf(marquez, row.dispatch_id)).toHaveLength(1);
  });

  it('sends a slow receiver’s event again, identical, under the same X-Dispatch-Id: a repeat it can drop', async () => {
    marquez.reset();
    // the first call of each dispatch is answered after the worker's timeout (1 s), the next at once
    marquez.replyBy((call) => {
      const id = String(call.headers['x-dispatch-id']);
      if (marquez.callsFor(id).length === 1) return { status: 200, delayMs: 1500 };
      delivered.set(id, call.body);
      return 200;
    });
    const impatient = otherWorker(lineageConfig(`${marquez.url}api/v1/lineage`, { timeoutSeconds: 1 }));
    const run = await startRun(api, [3], { create: { businessKey: '2026-10-05', parameters: { sourceTable: SOURCE_TABLE } } });
    await drain(impatient);
    const [start] = await lineageRows([run.runId]);
    expect(start).toMatchObject({ event_type: 'START', status: 'ACKED', attempt_count: 2 });
    const calls = callsOf(marquez, start!.dispatch_id);
    expect(calls).toHaveLength(2);
    expect(calls[1]!.headers['x-dispatch-id']).toBe(calls[0]!.headers['x-dispatch-id']);
    expect(calls[1]!.body).toEqual(calls[0]!.body);
    acceptAll(marquez);
    await api.gql(CANCEL_RUN, { input: { runId: run.runId, reason: 'done with it' } }, { token: 'operator' });
    await drain(worker);
  });

  it('writes nothing once a worker with lineage off has swept, and cancels what was left undelivered', async () => {
    marquez.reset();
    acceptAll(marquez);
    const pending = await startRun(api, [3], { create: { businessKey: '2026-10-06' } });
    expect((await lineageRows([pending.runId])).map((r) => r.status)).toEqual(['PENDING']);
    const off = otherWorker(workerConfig(api, nifi));
    expect(off.config.lineage.enabled).toBe(false);
    await off.sweeper.cycle();
    await off.dispatcher.dispatchOnce();
    const cancelled = await lineageRows([pending.runId]);
    expect(cancelled.map((r) => [r.status, r.last_error])).toEqual([['CANCELLED', 'lineage is not enabled (lineage.enabled)']]);
    const quiet = await startRun(api, [3], { create: { businessKey: '2026-10-07' } });
    await api.gql(CANCEL_RUN, { input: { runId: quiet.runId, reason: 'nothing to see' } }, { token: 'operator' });
    expect(await lineageRows([quiet.runId])).toEqual([]);
    expect(marquez.calls).toEqual([]);
    // back on for whatever follows
    await worker.sweeper.cycle();
  });
});

describe('the events, checked by the standard', () => {
  /** The sample a test breaks on purpose: a COMPLETE, its event type, a time, a facet's place and a field spoilt. */
  function broken(): Record<string, unknown> {
    const [sample] = [...delivered.values()].filter((e) => e.eventType === 'COMPLETE');
    const event = structuredClone(sample!) as Record<string, any>;
    event.eventType = 'DONE';
    event.run.facets.nominalTime.nominalStartTime = '2026-10-01';
    event.inputs[0].inputFacets.outputStatistics = event.outputs[0].outputFacets.outputStatistics;
    delete event.outputs[0].facets.loadControl_partition.value;
    return event;
  }

  // one JVM for both: the first run of a machine also fetches the artifacts from Maven Central
  it('accepts every event delivered, by the published OpenLineage schemas and openlineage-java’s model, and refuses a broken one', {
    timeout: 180_000,
  }, () => {
    const events = [...delivered.values()];
    expect(new Set(events.map((e) => e.eventType))).toEqual(new Set(['START', 'RUNNING', 'COMPLETE', 'FAIL', 'ABORT']));
    const { results, openlineageJava, schemas } = validateOpenLineageEvents([...events, broken()]);
    expect(openlineageJava).toBe('1.46.0');
    // the spec, its facets and Load Control's two
    expect(schemas).toBe(40);
    const refused = results.pop()!.errors.join('\n');
    expect(results.map((r, i) => ({ eventType: events[i]!.eventType, errors: r.errors }))).toEqual(
      events.map((e) => ({ eventType: e.eventType, errors: [] })),
    );
    // what breaks the standard is refused, so the acceptance means something
    expect(refused).toMatch(/eventType/);
    expect(refused).toMatch(/nominalStartTime/);
    expect(refused).toMatch(/inputFacets\.outputStatistics: a OutputDatasetFacet where a InputDatasetFacet belongs/);
    expect(refused).toMatch(/loadControl_partition.*value/);
  });
});
