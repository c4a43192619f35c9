// The NiFi simulator: starts Load Control (API and worker processes) on a fresh database, drives it over HTTP
// as a NiFi cluster running the kit's flow would — PG-10 runs and manifests, PG-20 claims and chunks, the PG-05
// receiver of the worker's calls, PG-40 validation, PG-50 publish, PG-60 target validation, PG-70 cleanup,
// PG-90 events, the business-date gate — every request rendered from the kit's templates (nifi/requests), with
// the faults asked for; then checks the invariants against the database and exits non-zero on any violation.
// Usage: npm run simulate -- --runs 40 --partitions 8 --faults all --seed 7   (npx tsx sim/simulate.ts …)
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { benchDatabase } from '../bench/support.js';
import { backfillKeyPlan, startBackfill } from './backfill.js';
import { startChaos } from './chaos.js';
import { ClientStats, SimClient, type FaultSwitch, type Log } from './client.js';
import { Cluster, SIM_APPLICATION_NAME } from './cluster.js';
import { driveKey, keyPlan, loadBackfillDate, UNGATED_JOBS } from './coordinator.js';
import { ExtractPool } from './extract.js';
import { defineGates } from './gate.js';
import { cleanUp } from './cleanup.js';
import { checkClients, checkDatabase, type InvariantResult } from './invariants.js';
import { definePool, samplePool } from './pools.js';
import { Ledger } from './ledger.js';
import { Operator } from './operator.js';
import { parseOptions, USAGE, type SimOptions } from './options.js';
import { Dice } from './random.js';
import { receivedFlowFile, startReceiver } from './receiver.js';
import { validationFlow } from './validate.js';
import type { World } from './world.js';

const EXTRACT_TASKS = 48;
const SAMPLES = 10;

async function forEachConcurrently(count: number, concurrency: number, work: (index: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(concurrency, count) }, async () => {
      for (let i = next++; i < count; i = next++) await work(i);
    }),
  );
}

const seconds = (since: number) => ((performance.now() - since) / 1000).toFixed(1);

function describeCounts(counts: Map<string, number>): string {
  return (
    [...counts.entries()]
      .sort((a, b) => b[1] - a[1])
      .map(([k, n]) => `${k} ${n}`)
      .join(', ') || 'none'
  );
}

async function simulate(options: SimOptions): Promise<number> {
  const started = performance.now();
  const log: Log = options.verbose ? (m) => console.error(`[${seconds(started).padStart(6)}s] ${m}`) : () => undefined;
  const faultList = options.faults.size ? [...options.faults].join(',') : 'none';
  console.log(
    `simulate: ${options.runs} business keys × ${options.partitions} partitions × ~${options.chunks} chunks; faults ${faultList}; seed ${options.seed}`,
  );

  const logDir = mkdtempSync(join(tmpdir(), `lc-sim-${options.seed}-`));
  const database = await benchDatabase();
  const db = new pg.Pool({ connectionString: database.url, max: 4, application_name: SIM_APPLICATION_NAME });
  db.on('error', () => undefined);
  const dice = new Dice(options.seed);
  const faults: FaultSwitch = { enabled: (fault) => options.faults.has(fault) };
  const ledger = new Ledger();
  const stats = new ClientStats();
  let stopping = false;
  let cluster: Cluster | undefined;
  let closeBackfill: () => Promise<void> | undefined = () => undefined;
  const client = new SimClient(() => cluster!.endpoints(), faults, dice, stats, log);
  const world: World = { client, dice, faults, options, ledger, log, db, stopping: () => stopping };
  const pool = new ExtractPool(world, EXTRACT_TASKS);
  const validations: Array<Promise<void>> = [];
  const backfillLoads: Array<Promise<void>> = [];

  const receiver = await startReceiver(
    {
      validate(call, copy) {
        const run = ledger.run(call.runId);
        if (!run) return void receiver.stats.malformed.push(`validate ${call.dispatchId}: unknown run ${call.runId}`);
        if (copy === 0) run.validateCalls++;
        validations.push(
          validationFlow(world, run, receivedFlowFile('validate', call), `VALIDATE-${run.validateCalls}`, copy).catch(
            (error) => void ledger.abandonedFlows.push(`PG-40 ${call.runId}: ${(error as Error).message}`),
          ),
        );
      },
      reissue(call, copy) {
        const run = ledger.run(call.runId);
        const partition = run?.partitions.get(call.partitionId);
        if (!run || !partition)
          return void receiver.stats.malformed.push(`reissue ${call.dispatchId}: unknown ${call.runId}/${call.partitionId}`);
        if (String(partition.expectedRowCount) !== call.expectedRowCount || !call.hdfsRunPath?.startsWith(run.hdfsRunPath)) {
          receiver.stats.malformed.push(`reissue ${call.dispatchId}: ${JSON.stringify(call)} does not describe the partition`);
        }
        if (copy === 0) partition.reissueCalls++;
        pool.submit({ run, partition, origin: `REISSUE-${partition.reissueCalls}`, copy, attributes: receivedFlowFile('reissue', call) });
      },
      start(call) {
        backfillLoads.push(
          loadBackfillDate(world, pool, backfillKeyPlan(call.jobKey, call.businessKey), receivedFlowFile('start', call)).catch(
            (error) => void ledger.abandonedFlows.push(`PG-10 backfill ${call.businessKey}: ${(error as Error).message}`),
          ),
        );
      },
    },
    faults,
    dice,
    log,
    (kind, runId, partitionId) => {
      const run = ledger.run(runId);
      return run ? [kind, run.keyIndex, run.runNumber, partitionId ?? '-'] : [kind, runId];
    },
  );

  process.on('exit', () => cluster?.killAll());
  process.on('SIGINT', () => process.exit(130));
  process.on('SIGTERM', () => process.exit(143));
  let exitCode = 1;
  try {
    const boot = performance.now();
    cluster = await Cluster.start({
      databaseUrl: database.url,
      receiverUrl: receiver.url,
      apis: options.apis,
      workers: options.workers,
      fromSource: options.cli === 'source',
      logDir,
      log,
    });
    console.log(
      `cluster: ${options.apis} API + ${options.workers} worker processes (${options.cli}) up in ${seconds(boot)} s; their logs: ${logDir}`,
    );

    await defineGates(world);
    const backfill = options.backfill && (await startBackfill(world, options.backfill));
    closeBackfill = () => backfill?.close();
    const poolLimit = options.poolLimit;
    if (poolLimit !== null) await definePool(world, UNGATED_JOBS, poolLimit);
    const poolUse = poolLimit === null ? null : samplePool(world, poolLimit);
    const operator = new Operator(world);
    let driving = true;
    const operatorDone = operator.watch(() => !driving);
    const cleaning = cleanUp(world, () => !driving);
    const chaos = startChaos(world, cluster);
    const deadline = setTimeout(() => {
      stopping = true;
      console.log(`time is up (${options.timeoutSeconds} s): stopping the flows`);
    }, options.timeoutSeconds * 1000);

    const driveStart = performance.now();
    await Promise.all([
      forEachConcurrently(options.runs, options.concurrency, (index) => driveKey(world, pool, keyPlan(index))),
      backfill?.settled(),
    ]);
    clearTimeout(deadline);
    await chaos.stop();
    const backfillHeld = (await backfill?.finish()) ?? [];
    driving = false;
    await operatorDone;
    await cleaning;
    stopping = true;
    await pool.idle();
    await Promise.all(validations);
    await Promise.all(backfillLoads);
    const poolHeld = await poolUse?.stop();
    console.log(`driven in ${seconds(driveStart)} s`);

    const { rows: statuses } = await db.query<{ status: string; n: number }>(
      'SELECT status, count(*)::int AS n FROM nifi_ops.load_run GROUP BY status ORDER BY n DESC, status',
    );
    const { rows: dispatches } = await db.query<{ dispatch_type: string; status: string; n: number; sends: number; max_sends: number }>(
      `SELECT dispatch_type, status, count(*)::int AS n, sum(attempt_count)::int AS sends, max(attempt_count)::int AS max_sends
         FROM nifi_ops.load_dispatch GROUP BY dispatch_type, status ORDER BY dispatch_type, status`,
    );
    const { rows: reissues } = await db.query<{ why: string; n: number }>(
      `SELECT COALESCE(error_code, message) AS why, count(*)::int AS n FROM nifi_ops.load_event
        WHERE event_name = 'RECOVERY_REISSUED' GROUP BY 1 ORDER BY 2 DESC`,
    );
    const racers = ledger.races.filter((r) => r.racers >= 2).length;
    const byStatus = [...stats.byOperation.values()].reduce((all, m) => {
      for (const [s, n] of m) all.set(String(s), (all.get(String(s)) ?? 0) + n);
      return all;
    }, new Map<string, number>());
    console.log(`runs: ${statuses.reduce((a, s) => a + s.n, 0)} (${statuses.map((s) => `${s.status} ${s.n}`).join(', ')})`);
    console.log(
      `dispatches: ${dispatches.map((d) => `${d.dispatch_type} ${d.status} ${d.n} (${d.sends} sends, at most ${d.max_sends})`).join(', ')}`,
    );
    console.log(`reissues: ${reissues.map((r) => `${r.why} ${r.n}`).join(', ') || 'none'}`);
    console.log(`requests: ${stats.requests} (HTTP ${describeCounts(byStatus)}); connection failures ${stats.transportErrors}`);
    console.log(
      [
        `faults: lost responses ${stats.lost}`,
        `duplicated requests ${stats.duplicated}`,
        `worker crashes ${ledger.crashes.length}`,
        `source failures ${ledger.sourceFailures.length}`,
        `extract failures ${ledger.extractFailures.length}`,
        `late reports ${ledger.lateReports.length}`,
        `last-chunk races ${racers}`,
        `receiver 5xx ${receiver.stats.answered5xx} / 404 ${receiver.stats.answered4xx} / late ${receiver.stats.answeredLate} / lost ${receiver.stats.lostFlows} / duplicated flows ${receiver.stats.duplicatedFlows}`,
        `API kills ${cluster.apis.reduce((a, p) => a + p.kills, 0)}`,
        `worker kills ${cluster.workers.reduce((a, p) => a + p.kills, 0)}`,
        `connections terminated ${cluster.terminatedConnections}`,
        `503 answers ${stats.unavailable}`,
      ].join(', '),
    );
    const { resolved, resent, cancelled } = ledger.operatorActions;
    console.log(`operator: resolved ${resolved} PUBLISH_UNKNOWN, resent ${resent} dispatches, cancelled ${cancelled} stalled runs`);
    console.log(`cleanup: ${ledger.cleaned.length} runs cleaned up`);

    const results: InvariantResult[] = [
      ...(await checkDatabase(db)),
      ...(await checkClients(db, ledger, stats, receiver.stats)),
      ...(poolHeld ? [poolHeld] : []),
      ...backfillHeld,
      {
        name: 'processes_restarted',
        checked: cluster.apis.concat(cluster.workers).reduce((a, p) => a + p.kills, 0),
        violations: chaos.failures,
      },
    ];
    console.log('invariants (name: checked, violations):');
    for (const r of results) {
      console.log(`${r.name}: ${r.checked}, ${r.violations.length}`);
      for (const v of r.violations.slice(0, SAMPLES)) console.log(`    ${v}`);
      if (r.violations.length > SAMPLES) console.log(`    … and ${r.violations.length - SAMPLES} more`);
    }
    const violated = results.filter((r) => r.violations.length > 0).length;
    exitCode = violated === 0 ? 0 : 1;
    console.log(
      violated === 0
        ? `result: every invariant holds (${seconds(started)} s)`
        : `result: ${violated} invariants violated (${seconds(started)} s); the processes' logs are kept in ${logDir}`,
    );
  } finally {
    await cluster?.stop();
    await receiver.close();
    await closeBackfill();
    await db.end();
    await database.close();
    if (exitCode === 0) rmSync(logDir, { recursive: true, force: true });
  }
  return exitCode;
}

let options: SimOptions | 'help';
try {
  options = parseOptions(process.argv.slice(2));
} catch (error) {
  console.error(`${(error as Error).message}\n\n${USAGE}`);
  process.exit(2);
}
if (options === 'help') {
  console.log(USAGE);
  process.exit(0);
}
process.exit(await simulate(options));
