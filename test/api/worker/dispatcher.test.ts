import { once } from 'node:events';
import http from 'node:http';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, type TestApi } from '../../support/api.js';
import { FAIL_PARTITION, JOB, claim, completeRun, startRun } from '../../support/fixtures.js';
import { startReceiver, type Receiver } from '../../support/receiver.js';
import { until } from '../../support/until.js';
import { dispatchRow, eventsNamed, makeDue, testWorker, workerConfig, type TestWorkerParts } from '../../support/worker.js';
import { inStatement, inTransaction } from '../../../src/db/transaction.js';
import { backoffMs } from '../../../src/domain/dispatch/backoff.js';
import { markDead } from '../../../src/domain/dispatch/deliver.js';
import { leaseDispatches, releaseLeases, type LeasedDispatch } from '../../../src/domain/dispatch/lease.js';

/** A worker's lease of up to 10 calls, with NiFi's receiver and no alert receiver or lineage. */
const LEASE = { batch: 10, leaseMs: 60_000, alertReceivers: [], lineage: false, nifi: true };
const REISSUE = `mutation($input: ReissuePartitionInput!) { reissuePartition(input: $input) { partitionStatus dispatchId } }`;

let api: TestApi;
let receiver: Receiver;
let worker: TestWorkerParts;
const extraWorkers: TestWorkerParts[] = [];

beforeAll(async () => {
  api = await startTestApi();
  receiver = await startReceiver();
  worker = testWorker(api, workerConfig(api, receiver));
});
afterEach(async () => {
  receiver.reset();
  await Promise.all(extraWorkers.splice(0).map((w) => w.close()));
  // leave nothing due for the next test
  await api.sql.query(
    `UPDATE nifi_ops.load_dispatch SET status = 'ACKED', acked_at = clock_timestamp() WHERE status IN ('PENDING', 'SENT')`,
  );
});
afterAll(async () => {
  await worker?.close();
  await receiver?.close();
  await api?.close();
});

async function reissue(runId: string, partitionId: string): Promise<string> {
  const res = await api.gql(REISSUE, { input: { runId, partitionId, reason: 'test reissue' } }, { token: 'operator' });
  expect(res.body.errors).toBeUndefined();
  return res.body.data!.reissuePartition.dispatchId;
}

async function closedPortUrl(): Promise<string> {
  const server = http.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return `http://127.0.0.1:${port}`;
}

describe('backoff', () => {
  it('doubles from backoffMin per attempt and is capped at backoffMax', () => {
    expect(backoffMs(1, 5_000, 60_000)).toBe(5_000);
    expect(backoffMs(2, 5_000, 60_000)).toBe(10_000);
    expect(backoffMs(3, 5_000, 60_000)).toBe(20_000);
    expect(backoffMs(10, 5_000, 60_000)).toBe(60_000);
    expect(backoffMs(1_000_000, 5_000, 300_000)).toBe(300_000);
  });
});

describe('releaseLeases', () => {
  const release = (leases: LeasedDispatch[]) => inStatement(api.db, (sql, afterCommit) => releaseLeases(sql, leases, afterCommit));

  it('makes a lease not sent due at once with its attempt uncounted, but not one that expired and was taken again', async () => {
    const run = await completeRun(api);
    const [first] = (await leaseDispatches(api.db.pool, LEASE)).leased;
    expect(first).toMatchObject({ dispatchId: run.dispatchId, attempt: 1 });
    expect(await release([first!])).toBe(1);
    expect(await dispatchRow(api, run.dispatchId)).toMatchObject({ status: 'PENDING', attempt_count: 0, deferred: false });

    const [again] = (await leaseDispatches(api.db.pool, LEASE)).leased;
    expect(again).toMatchObject({ dispatchId: run.dispatchId, attempt: 1 });
    // the lease expires and another worker takes the call
    await makeDue(api, run.runId);
    const [third] = (await leaseDispatches(api.db.pool, LEASE)).leased;
    expect(third).toMatchObject({ dispatchId: run.dispatchId, attempt: 2 });
    expect(await release([again!])).toBe(0);
    expect(await dispatchRow(api, run.dispatchId)).toMatchObject({ status: 'PENDING', attempt_count: 2, deferred: true });
  });
});

describe('leaseDispatches', () => {
  it('leaves NiFi’s calls waiting for a worker without nifi.receiverUrl: neither leased nor reported unwanted', async () => {
    const run = await completeRun(api);
    const withoutNifi = await leaseDispatches(api.db.pool, { ...LEASE, nifi: false });
    expect(withoutNifi).toEqual({ leased: [], unwanted: [] });
    expect(await dispatchRow(api, run.dispatchId)).toMatchObject({ status: 'PENDING', attempt_count: 0 });
    const withNifi = await leaseDispatches(api.db.pool, LEASE);
    expect(withNifi.leased.map((d) => d.dispatchId)).toEqual([run.dispatchId]);
  });
});

describe('dispatcher', () => {
  it('delivers VALIDATE_RUN as ref §3.23 and marks it SENT; the next pass sends nothing', async () => {
    const run = await completeRun(api);
    expect(await worker.dispatcher.dispatchOnce()).toBe(1);
    expect(receiver.calls).toHaveLength(1);
    const [call] = receiver.calls;
    expect(call!.method).toBe('POST');
    expect(call!.path).toBe(`/nifi-control/validate/${JOB}`);
    expect(call!.headers['x-run-id']).toBe(run.runId);
    expect(call!.headers['x-dispatch-id']).toBe(run.dispatchId);
    expect(call!.headers['content-type']).toBe('application/json');
    expect(call!.headers.authorization).toBeUndefined();
    expect(call!.body).toEqual({ runId: run.runId, dispatchId: run.dispatchId });
    expect(await dispatchRow(api, run.dispatchId)).toMatchObject({
      status: 'SENT',
      attempt_count: 1,
      last_http_status: 202,
      last_error: null,
      sent_at: expect.any(Date),
    });
    expect(await worker.dispatcher.dispatchOnce()).toBe(0);
    expect(receiver.calls).toHaveLength(1);
  });

  it('defers a call answered 503, keeping status and body, and does not resend it before the backoff', async () => {
    const run = await completeRun(api);
    receiver.script({ status: 503, body: 'busy' });
    await worker.dispatcher.dispatchOnce();
    expect(await dispatchRow(api, run.dispatchId)).toMatchObject({
      status: 'PENDING',
      attempt_count: 1,
      last_http_status: 503,
      last_error: 'busy',
      deferred: true,
    });
    const { rows } = await api.sql.query(
      `SELECT next_attempt_at > clock_timestamp() + interval '3 seconds' AS backed_off FROM nifi_ops.load_dispatch WHERE dispatch_id = $1`,
      [run.dispatchId],
    );
    expect(rows[0].backed_off).toBe(true);
    expect(await worker.dispatcher.dispatchOnce()).toBe(0);
    expect(receiver.calls).toHaveLength(1);
  });

  it('defers a call that finds no receiver (connection refused) with no HTTP status', async () => {
    const refused = testWorker(api, workerConfig(api, { url: await closedPortUrl() }));
    extraWorkers.push(refused);
    const run = await completeRun(api);
    await refused.dispatcher.dispatchOnce();
    const row = await dispatchRow(api, run.dispatchId);
    expect(row).toMatchObject({ status: 'PENDING', attempt_count: 1, last_http_status: null, deferred: true });
    expect(row.last_error).toMatch(/refused/i);
  });

  it('defers a call the receiver does not answer within nifi.timeoutSeconds', async () => {
    const impatient = testWorker(api, workerConfig(api, receiver, { nifi: { timeoutSeconds: 0.3 } }));
    extraWorkers.push(impatient);
    const run = await completeRun(api);
    receiver.script({ status: 202, delayMs: 3_000 });
    await impatient.dispatcher.dispatchOnce();
    const row = await dispatchRow(api, run.dispatchId);
    expect(row).toMatchObject({ status: 'PENDING', last_http_status: null, deferred: true });
    expect(row.last_error).toMatch(/timeout/i);
  });

  it.each([408, 425, 429, 307, 500])('retries later on HTTP %i', async (status) => {
    const run = await completeRun(api);
    receiver.script(status);
    await worker.dispatcher.dispatchOnce();
    expect(await dispatchRow(api, run.dispatchId)).toMatchObject({ status: 'PENDING', last_http_status: status, deferred: true });
    expect(receiver.calls).toHaveLength(1);
  });

  it('gives up after dispatch.maxAttempts transient failures: DEAD, dated, one DISPATCH_DEAD event', async () => {
    const run = await completeRun(api);
    receiver.script({ status: 500, body: 'e1' }, { status: 500, body: 'e2' }, { status: 500, body: 'e3' });
    for (let i = 0; i < 3; i++) {
      await makeDue(api, run.runId);
      expect(await worker.dispatcher.dispatchOnce()).toBe(1);
    }
    const row = await dispatchRow(api, run.dispatchId);
    expect(row).toMatchObject({ status: 'DEAD', attempt_count: 3, last_http_status: 500, last_error: 'max attempts reached: e3' });
    expect(row.dead_at).toBeInstanceOf(Date);
    expect(await eventsNamed(api, run.runId, 'DISPATCH_DEAD')).toEqual([
      {
        event_level: 'ERROR',
        partition_id: null,
        error_code: null,
        message: 'max attempts reached: e3',
        actor: 'dispatcher',
        details: { dispatchId: run.dispatchId, type: 'VALIDATE_RUN', httpStatus: 500, attempt: 3 },
      },
    ]);
    await makeDue(api, run.runId);
    expect(await worker.dispatcher.dispatchOnce()).toBe(0);
  });

  it('writes DISPATCH_DEAD only for the transition that killed the call', async () => {
    const run = await completeRun(api);
    const dead = {
      dispatchId: run.dispatchId,
      runId: run.runId,
      gate: null,
      alert: null,
      dispatchType: 'VALIDATE_RUN' as const,
      partitionId: null,
      attempt: 1,
      httpStatus: 400,
      error: 'bad request',
      actor: 'dispatcher',
    };
    const results = await Promise.all([
      inTransaction(api.db, (tx) => markDead(tx, dead)),
      inTransaction(api.db, (tx) => markDead(tx, dead)),
    ]);
    expect(results.sort()).toEqual([false, true]);
    expect(await eventsNamed(api, run.runId, 'DISPATCH_DEAD')).toHaveLength(1);
  });

  it('marks a call DEAD at once when the receiver answers a client error other than 408/425/429', async () => {
    const run = await completeRun(api);
    receiver.script({ status: 400, body: 'no such flow' });
    await worker.dispatcher.dispatchOnce();
    expect(await dispatchRow(api, run.dispatchId)).toMatchObject({
      status: 'DEAD',
      attempt_count: 1,
      last_http_status: 400,
      last_error: 'no such flow',
      dead_at: expect.any(Date),
    });
    expect(await eventsNamed(api, run.runId, 'DISPATCH_DEAD')).toHaveLength(1);
  });

  it('sends REISSUE_PARTITION with the partition to extract again, numerics as strings', async () => {
    const run = await startRun(api, [3, 4]);
    const dispatchId = await reissue(run.runId, '0001');
    await worker.dispatcher.dispatchOnce();
    expect(receiver.calls).toHaveLength(1);
    expect(receiver.calls[0]!.path).toBe(`/nifi-control/reissue/${JOB}`);
    expect(receiver.calls[0]!.headers['x-dispatch-id']).toBe(dispatchId);
    expect(receiver.calls[0]!.body).toEqual({
      runId: run.runId,
      dispatchId,
      partitionId: '0001',
      businessKey: run.businessKey,
      snapshotScn: '1234567890',
      hdfsRunPath: run.hdfsRunPath,
      lowerBound: '1001',
      upperBound: '2001',
      upperInclusive: true,
      isNullPartition: false,
      expectedRowCount: '4',
    });
  });

  it('keeps nulls of a NULL partition in the reissue body', async () => {
    const run = await startRun(api, [3], { nullCount: 2 });
    const dispatchId = await reissue(run.runId, 'NULL');
    await worker.dispatcher.dispatchOnce();
    expect(receiver.callsFor(dispatchId)[0]!.body).toMatchObject({
      partitionId: 'NULL',
      lowerBound: null,
      upperBound: null,
      upperInclusive: false,
      isNullPartition: true,
      expectedRowCount: '2',
    });
  });

  it('keeps an ACK that arrived before the 2xx was recorded (the partition was claimed meanwhile)', async () => {
    const run = await startRun(api, [3, 4]);
    const dispatchId = await reissue(run.runId, '0000');
    // NiFi claims the RETRY partition (the ACK) before its 202 reaches the dispatcher
    receiver.onCall(async () => {
      const c = await claim(api, run.runId, '0000');
      expect(c.result?.claimed).toBe(true);
    });
    await worker.dispatcher.dispatchOnce();
    expect(await dispatchRow(api, dispatchId)).toMatchObject({ status: 'ACKED', acked_at: expect.any(Date), sent_at: null });
  });

  it('fails the pass, not the process, when the next lease fails while a batch is on the wire', async () => {
    // seen on the Patroni cluster (test/ha/): the lease taken during a batch's delivery failed in a switchover, and
    // its rejection, awaited only after the delivery, ended `work` as an unhandled rejection
    const run = await completeRun(api);
    const own = testWorker(api, workerConfig(api, receiver), { ownPool: true });
    extraWorkers.push(own);
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    let reply!: () => void;
    const replied = new Promise<void>((resolve) => {
      reply = resolve;
    });
    receiver.onCall(() => replied);
    const [share, exclusive] = [
      new pg.Client({ connectionString: api.database.url }),
      new pg.Client({ connectionString: api.database.url }),
    ];
    await Promise.all([share.connect(), exclusive.connect()]);
    const lockWaiters = async () =>
      (
        await api.sql.query<{ pid: number }>(
          `SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`,
        )
      ).rows;
    try {
      // the first lease waits behind a SHARE lock and an EXCLUSIVE lock queues behind it: once the first lease has
      // committed, the EXCLUSIVE lock is granted, and the next lease, begun as the batch goes out, waits behind it
      await share.query('BEGIN; LOCK TABLE nifi_ops.load_dispatch IN SHARE MODE');
      const pass = own.dispatcher.dispatchOnce();
      pass.catch(() => undefined);
      await until('the first lease to wait', async () => (await lockWaiters()).length === 1);
      await exclusive.query('BEGIN');
      const locked = exclusive.query('LOCK TABLE nifi_ops.load_dispatch IN EXCLUSIVE MODE');
      await until('the EXCLUSIVE lock to queue', async () => (await lockWaiters()).length === 2);
      await share.query('COMMIT');
      await locked;
      await until('the batch to be on the wire', () => receiver.callsFor(run.dispatchId).length === 1);
      const [nextLease] = await until('the next lease to wait', async () => {
        const waiting = await lockWaiters();
        return waiting.length === 1 && waiting;
      });
      // the database ends the next lease's connection while the batch's call is still unanswered
      const removed = once(own.db.pool, 'remove');
      await api.sql.query('SELECT pg_terminate_backend($1)', [nextLease!.pid]);
      await removed;
      await new Promise((resolve) => setImmediate(resolve));
      expect(unhandled).toEqual([]);
      await exclusive.query('COMMIT');
      reply();
      await expect(pass).rejects.toMatchObject({ code: 'SERVICE_UNAVAILABLE' });
      // the batch on the wire was recorded all the same
      expect(await dispatchRow(api, run.dispatchId)).toMatchObject({ status: 'SENT', attempt_count: 1 });
    } finally {
      process.off('unhandledRejection', onUnhandled);
      reply();
      receiver.onCall(undefined);
      await exclusive.query('ROLLBACK').catch(() => undefined);
      await Promise.all([share.end(), exclusive.end()]);
    }
  });

  it('does not resend a leased call while its lease runs, and resends it once the lease expired', async () => {
    const run = await completeRun(api);
    // a worker leases the call and dies before sending it
    const { leased } = await leaseDispatches(api.db.pool, { ...LEASE, batch: 20 });
    expect(leased.map((l) => l.dispatchId)).toEqual([run.dispatchId]);
    expect(await worker.dispatcher.dispatchOnce()).toBe(0);
    expect(receiver.calls).toHaveLength(0);
    await makeDue(api, run.runId);
    expect(await worker.dispatcher.dispatchOnce()).toBe(1);
    expect(receiver.callsFor(run.dispatchId)).toHaveLength(1);
    expect(await dispatchRow(api, run.dispatchId)).toMatchObject({ status: 'SENT', attempt_count: 2 });
  });

  it('cancels instead of sending a call whose run no longer waits for it (deviation 6)', async () => {
    const run = await startRun(api, [3, 4]);
    const dispatchId = await reissue(run.runId, '0000');
    // the run fails through another partition before the reissue call goes out
    const owner = await claim(api, run.runId, '0001');
    const fail = await api.gql(FAIL_PARTITION, {
      input: {
        runId: run.runId,
        partitionId: '0001',
        claimToken: owner.claimToken,
        errorStage: 'EXTRACT',
        errorClass: 'SQL',
        errorCode: 'ORA-00942',
      },
    });
    expect(fail.body.data!.failPartition.runStatus).toBe('FAILED_EXTRACT');
    expect(await worker.dispatcher.dispatchOnce()).toBe(0);
    expect(receiver.calls).toHaveLength(0);
    const row = await dispatchRow(api, dispatchId);
    expect(row).toMatchObject({ status: 'CANCELLED', attempt_count: 0, cancelled_at: expect.any(Date) });
    expect(row.last_error).toBe('run no longer waits: run FAILED_EXTRACT, partition RETRY');
    expect(await eventsNamed(api, run.runId, 'DISPATCH_CANCELLED')).toEqual([
      expect.objectContaining({
        partition_id: '0000',
        actor: 'dispatcher',
        details: { dispatchId, type: 'REISSUE_PARTITION' },
      }),
    ]);
    const metrics = await worker.registry.getSingleMetricAsString('lc_dispatch_total');
    expect(metrics).toMatch(/lc_dispatch_total\{type="REISSUE_PARTITION",result="cancelled"\} [1-9]/);
  });

  it('counts deliveries in lc_dispatch_total by type and result', async () => {
    await completeRun(api);
    receiver.script(503);
    await worker.dispatcher.dispatchOnce();
    const text = await worker.registry.getSingleMetricAsString('lc_dispatch_total');
    expect(text).toMatch(/lc_dispatch_total\{type="VALIDATE_RUN",result="sent"\} [1-9]/);
    expect(text).toMatch(/lc_dispatch_total\{type="VALIDATE_RUN",result="retry"\} [1-9]/);
  });

  it('sends each call exactly once when two dispatchers on their own connections race (10 repetitions)', async () => {
    // small batches, so that the two really interleave their leases
    const config = { ...worker.config, dispatch: { ...worker.config.dispatch, batch: 2 } };
    const a = testWorker(api, config, { ownPool: true });
    const b = testWorker(api, config, { ownPool: true });
    extraWorkers.push(a, b);
    const shares = [0, 0];
    for (let rep = 0; rep < 10; rep++) {
      receiver.reset();
      const runs = await Promise.all(Array.from({ length: 6 }, () => completeRun(api, [2])));
      const [sentA, sentB] = await Promise.all([a.dispatcher.dispatchOnce(), b.dispatcher.dispatchOnce()]);
      expect(sentA + sentB).toBe(6);
      shares[0] += sentA;
      shares[1] += sentB;
      expect(receiver.calls).toHaveLength(6);
      for (const run of runs) {
        expect(receiver.callsFor(run.dispatchId)).toHaveLength(1);
        expect(await dispatchRow(api, run.dispatchId)).toMatchObject({ status: 'SENT', attempt_count: 1 });
      }
    }
    // both took part: the leases really interleaved
    expect(shares[0]).toBeGreaterThan(0);
    expect(shares[1]).toBeGreaterThan(0);
  });

  it('requeues a call nobody acknowledged within ackTimeout, and gives it up after maxAttempts sends', async () => {
    const run = await completeRun(api);
    for (let send = 1; send <= 3; send++) {
      await worker.dispatcher.dispatchOnce();
      expect(receiver.callsFor(run.dispatchId)).toHaveLength(send);
      await api.sql.query(`UPDATE nifi_ops.load_dispatch SET sent_at = sent_at - interval '11 minutes' WHERE dispatch_id = $1`, [
        run.dispatchId,
      ]);
      await worker.sweeper.cycle();
    }
    const row = await dispatchRow(api, run.dispatchId);
    expect(row).toMatchObject({
      status: 'DEAD',
      attempt_count: 3,
      last_error: 'no ack after 3 attempts (ack timeout)',
      dead_at: expect.any(Date),
    });
    expect(await eventsNamed(api, run.runId, 'DISPATCH_DEAD')).toEqual([
      expect.objectContaining({
        actor: 'sweeper',
        message: 'no ack after 3 attempts (ack timeout)',
      }),
    ]);
    expect(await eventsNamed(api, run.runId, 'DISPATCH_REQUEUED')).toHaveLength(2);
    expect(await worker.dispatcher.dispatchOnce()).toBe(0);
  });

  it('accepts any 2xx as received', async () => {
    const run = await completeRun(api);
    receiver.script(200);
    await worker.dispatcher.dispatchOnce();
    expect(await dispatchRow(api, run.dispatchId)).toMatchObject({ status: 'SENT', last_http_status: 200 });
  });
});
