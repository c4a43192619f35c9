// Dispatch benchmark: an API process and two worker processes (the CLI from source, under tsx) on one
// database, and a loopback NiFi receiver that answers 202.
//   throughput — deliveries/s for a backlog of VALIDATE_RUN calls committed at once
//   wake-up    — from the commit of the chunk report that completes a run to the receiver seeing the
//                worker's call, one run at a time (the poll interval stays at its 5 s default, so only
//                LISTEN/NOTIFY can make this fast)
// Usage: npx tsx bench/dispatch.ts   (BENCH_DISPATCHES, default 3000; BENCH_RUNS, default 200;
// DATABASE_URL optional: the benchmark creates and drops its own database there, else an embedded one)
import { randomUUID } from 'node:crypto';
import type { ChildProcess } from 'node:child_process';
import pg from 'pg';
import { hashToken } from '../src/auth/tokens.js';
import { startReceiver, type Receiver } from '../test/support/receiver.js';
import {
  BENCH_TOKEN,
  benchDatabase,
  CLAIM_PARTITION,
  CREATE_RUN,
  fmt,
  freePort,
  gql,
  postgresCpuSeconds,
  printTable,
  processCpuSeconds,
  REGISTER_MANIFEST,
  REPORT_CHUNK,
  spawnCli,
  waitUntilReady,
} from './support.js';

const DISPATCHES = Number(process.env.BENCH_DISPATCHES ?? 3000);
const RUNS = Number(process.env.BENCH_RUNS ?? 200);
const JOB = 'BENCH_DISPATCH';

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;

async function until(what: string, probe: () => Promise<boolean> | boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  await new Promise<void>((resolve) => {
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
  });
}

/** VALIDATE_RUN calls for `count` runs in EXTRACTED_VALIDATED, committed together; returns the commit time. */
async function backlog(sql: pg.Pool, count: number): Promise<number> {
  await sql.query(
    `
    WITH runs AS (
      INSERT INTO nifi_ops.load_run (run_id, job_key, business_key, status, source_count, expected_partition_count, extract_completed_at)
      SELECT gen_random_uuid(), $1, 'BACKLOG_' || i, 'EXTRACTED_VALIDATED', 0, 0, clock_timestamp() FROM generate_series(1, $2::int) AS i
      RETURNING run_id)
    INSERT INTO nifi_ops.load_dispatch (dispatch_id, run_id, dispatch_type) SELECT gen_random_uuid(), run_id, 'VALIDATE_RUN' FROM runs`,
    [JOB, count],
  );
  return performance.timeOrigin + performance.now();
}

/** A one-partition run through the API up to its last chunk report; returns the run's extract_completed_at (ms). */
async function completeOneRun(api: string, sql: pg.Pool, i: number): Promise<number> {
  const created = await gql(api, CREATE_RUN, {
    input: { jobKey: JOB, businessKey: `WAKE_${i}`, hdfsRoot: '/bench', stageTablePrefix: 'BENCH_' },
  });
  const { runId, hdfsRunPath } = created.body.data.createRun;
  await gql(api, REGISTER_MANIFEST, {
    input: {
      runId,
      sourceCount: '1',
      plannedPartitionCount: '1',
      partitions: [{ partitionId: '0000', lowerBound: '1', upperBound: '2', upperInclusive: true, expectedRowCount: '1' }],
    },
  });
  const claimToken = randomUUID();
  await gql(api, CLAIM_PARTITION, { input: { runId, partitionId: '0000', claimToken, workerNode: 'bench' } });
  const reported = await gql(api, REPORT_CHUNK, {
    input: {
      runId,
      partitionId: '0000',
      claimToken,
      chunkIndex: '0',
      chunkCount: '1',
      hdfsPath: `${hdfsRunPath}/part-0.parquet`,
      recordCount: '1',
    },
  });
  if (!reported.body.data?.reportChunk?.validationScheduled) throw new Error(JSON.stringify(reported.body));
  const { rows } = await sql.query<{ committed: number }>(
    'SELECT extract(epoch FROM extract_completed_at) * 1000 AS committed FROM nifi_ops.load_run WHERE run_id = $1',
    [runId],
  );
  return rows[0]!.committed;
}

async function main(): Promise<void> {
  const database = await benchDatabase();
  const receiver: Receiver = await startReceiver();
  const sql = new pg.Pool({ connectionString: database.url, max: 2 });
  const children: ChildProcess[] = [];
  try {
    const env = {
      DATABASE_URL: database.url,
      LC_SERVER__HOST: '127.0.0.1',
      LC_LOGGING__LEVEL: 'warn',
      LC_AUTH__TOKENS: JSON.stringify([{ name: 'bench', sha256: hashToken(BENCH_TOKEN), roles: ['nifi'] }]),
    };
    const apiPort = await freePort();
    const api = `http://127.0.0.1:${apiPort}`;
    children.push(spawnCli('serve', { ...env, PORT: String(apiPort) }, { fromSource: true }));
    await waitUntilReady(api, children[0]!);
    const workers: Array<{ child: ChildProcess; url: string }> = [];
    for (let w = 0; w < 2; w++) {
      const port = await freePort();
      const child = spawnCli(
        'work',
        { ...env, LC_NIFI__RECEIVER_URL: receiver.url },
        { fromSource: true, args: ['--metrics-port', String(port)] },
      );
      children.push(child);
      workers.push({ child, url: `http://127.0.0.1:${port}` });
    }
    for (const w of workers) await waitUntilReady(w.url, w.child);

    // throughput
    const apiPid = children[0]!.pid!;
    const cpu0 = { workers: workers.map((w) => processCpuSeconds(w.child.pid!)), api: processCpuSeconds(apiPid), pg: postgresCpuSeconds() };
    const committed = await backlog(sql, DISPATCHES);
    await sql.query(`SELECT pg_notify('load_dispatch', 'bench')`);
    await receiver.waitForCalls(DISPATCHES, 300_000);
    const seconds = (Math.max(...receiver.calls.map((c) => c.receivedAt)) - committed) / 1000;
    await until(
      'every call marked SENT',
      async () => {
        const { rows } = await sql.query(`SELECT count(*)::int AS n FROM nifi_ops.load_dispatch WHERE status = 'SENT'`);
        return rows[0].n === DISPATCHES;
      },
      120_000,
    );
    const workerCpu = workers.reduce((sum, w, i) => sum + processCpuSeconds(w.child.pid!) - cpu0.workers[i]!, 0);
    const pgCpu = postgresCpuSeconds() - cpu0.pg;
    const apiCpu = processCpuSeconds(apiPid) - cpu0.api;
    const duplicates = receiver.calls.length - new Set(receiver.calls.map((c) => c.headers['x-dispatch-id'])).size;
    receiver.reset();

    // wake-up latency
    const latencies: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      const before = receiver.calls.length;
      const commit = await completeOneRun(api, sql, i);
      await receiver.waitForCalls(before + 1, 30_000);
      latencies.push(receiver.calls[before]!.receivedAt - commit);
    }
    latencies.sort((a, b) => a - b);

    const perSecond = DISPATCHES / seconds;
    const p50 = percentile(latencies, 50);
    printTable(
      `dispatch: 1 API + ${workers.length} worker processes, ${process.env.DATABASE_URL ? 'DATABASE_URL server' : 'embedded PostgreSQL'}`,
      [
        {
          measure: 'deliveries/s',
          value: fmt(perSecond, 0),
          target: '≥ 1000',
          met: perSecond >= 1000 ? 'yes' : 'NO',
          note: `${DISPATCHES} calls in ${fmt(seconds, 2)} s, ${duplicates} sent twice`,
        },
        {
          measure: 'worker CPU µs/delivery',
          value: fmt((workerCpu / DISPATCHES) * 1e6, 0),
          target: '',
          met: '',
          note: `meanwhile: API process ${fmt((apiCpu / DISPATCHES) * 1e6, 0)}, all PostgreSQL processes on the host ${fmt((pgCpu / DISPATCHES) * 1e6, 0)}`,
        },
        {
          measure: 'wake-up p50 (ms)',
          value: fmt(p50, 1),
          target: '< 50',
          met: p50 < 50 ? 'yes' : 'NO',
          note: `${RUNS} runs, one at a time`,
        },
        {
          measure: 'wake-up p99 (ms)',
          value: fmt(percentile(latencies, 99), 1),
          target: '',
          met: '',
          note: `max ${fmt(latencies.at(-1)!, 1)} ms`,
        },
      ],
    );
  } finally {
    await Promise.all(children.map(stop));
    await sql.end();
    await receiver.close();
    await database.close();
  }
}

main().catch((error) => {
  console.error(error);
  process.exitCode = 1;
});
