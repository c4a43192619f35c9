// With --backfill-dates: a backfill of its own job runs alongside the business keys, under the same faults. An
// operator starts it through the API; the worker's pump asks PG-05 to start each date (START_LOAD), and PG-10 loads
// the date carrying the backfill id (sim/receiver.ts, sim/coordinator.ts). A gate requires the job, its GATE_READY
// calls going to a receiver the simulator runs on loopback. What must hold: never more than maxConcurrent active runs
// of the job (sampled on the database while the flows run), every date ended SUCCEEDED or with a named reason, no
// GATE_READY call before the operator released the backfill's readiness (--backfill-hold-readiness), and then one
// ready call per succeeded date.
import http from 'node:http';
import { DEFINE_GATE, RELEASE_BACKFILL_READINESS, START_BACKFILL } from '../schema/documents/operator.js';
import { ACTIVE_RUN_STATUSES } from '../src/domain/states.js';
import type { KeyPlan } from './coordinator.js';
import type { InvariantResult } from './invariants.js';
import { BACKFILL_DATES } from './operations.js';
import type { SimOptions } from './options.js';
import { poll, sleep, type World } from './world.js';

export const BACKFILL_JOB = 'SIM_BACKFILL';
const BACKFILL_GATE = 'SIM_BACKFILL_REPORT';
const FIRST_DATE_MS = Date.UTC(2031, 0, 1);
const DAY_MS = 86_400_000;
/** The ledger's key index of a backfill date: apart from the business keys' 0..runs-1. */
const KEY_INDEX_BASE = 1_000_000;
const SAMPLE_MS = 25;
/** After the release, every succeeded date's ready call must have arrived within this. */
const RELEASE_PATIENCE_MS = 30_000;
const ENDED_DATE_STATUSES = new Set(['SUCCEEDED', 'FAILED', 'SKIPPED', 'CANCELLED']);

type BackfillOptions = NonNullable<SimOptions['backfill']>;

/** What PG-10 loads for a backfill's start call. */
export function backfillKeyPlan(jobKey: string, businessKey: string): KeyPlan {
  return { index: KEY_INDEX_BASE + (Date.parse(businessKey) - FIRST_DATE_MS) / DAY_MS, jobKey, businessKey, gated: false };
}

interface GateCall {
  dispatchId: string;
  businessDate: string;
  ready: boolean;
  /** performance.now() when it arrived. */
  at: number;
}

interface BackfillDate {
  businessDate: string;
  status: string;
  reason: string | null;
}

/** The gate's receiver: takes every GATE_READY call (200 at once) and remembers it. */
async function startGateReceiver(): Promise<{ url: string; calls: GateCall[]; close(): Promise<void> }> {
  const calls: GateCall[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const at = performance.now();
      try {
        const body = JSON.parse(Buffer.concat(chunks).toString());
        calls.push({ dispatchId: String(body.dispatchId), businessDate: String(body.businessDate), ready: body.ready === true, at });
        res.writeHead(200).end();
      } catch {
        res.writeHead(400).end('unparsable body');
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}/gate-ready`,
    calls,
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

export interface BackfillDrive {
  /** Resolves when every date of the backfill has ended (or the time is up). */
  settled(): Promise<void>;
  /** Stops sampling, releases the held readiness, waits for the ready calls; the backfill's invariants. */
  finish(): Promise<InvariantResult[]>;
  close(): Promise<void>;
}

export async function startBackfill(world: World, options: BackfillOptions): Promise<BackfillDrive> {
  const receiver = await startGateReceiver();
  const gate = await world.client.call(
    'defineGate',
    DEFINE_GATE,
    { input: { consumer: BACKFILL_GATE, requiredJobs: [BACKFILL_JOB], notifyUrl: receiver.url } },
    { role: 'operator', key: ['gate', BACKFILL_GATE] },
  );
  if (gate.status !== 200) throw new Error(`defineGate ${BACKFILL_GATE}: ${gate.status} ${gate.code}`);
  const from = new Date(FIRST_DATE_MS).toISOString().slice(0, 10);
  const to = new Date(FIRST_DATE_MS + (options.dates - 1) * DAY_MS).toISOString().slice(0, 10);
  const started = await world.client.call<{ backfill: { backfillId: string } }>(
    'startBackfill',
    START_BACKFILL,
    {
      input: {
        jobKey: BACKFILL_JOB,
        from,
        to,
        reprocess: 'MISSING',
        maxConcurrent: options.maxConcurrent,
        pushReadiness: !options.holdReadiness,
      },
    },
    { role: 'operator', key: ['backfill', 'start'] },
  );
  if (started.status !== 200 || !started.data) throw new Error(`startBackfill: ${started.status} ${started.code}`);
  const { backfillId } = started.data.backfill;
  world.log(`backfill ${backfillId}: ${from}..${to}, maxConcurrent ${options.maxConcurrent}`);

  let reads = 0;
  const readDates = async () => {
    const reply = await world.client.call<{ status: string; dates: BackfillDate[] } | null>(
      'backfill',
      BACKFILL_DATES,
      { backfillId },
      { role: 'operator', key: ['backfill', 'read', reads++] },
    );
    return reply.data;
  };

  // the job's active runs, sampled while the flows run
  let sampling = true;
  let samples = 0;
  let peak = 0;
  const overLimit: string[] = [];
  const sampler = (async () => {
    while (sampling) {
      const { rows } = await world.db.query<{ n: number }>(
        'SELECT count(*)::int AS n FROM nifi_ops.load_run WHERE job_key = $1 AND status = ANY($2::text[])',
        [BACKFILL_JOB, ACTIVE_RUN_STATUSES],
      );
      const n = rows[0]!.n;
      samples++;
      peak = Math.max(peak, n);
      if (n > options.maxConcurrent)
        overLimit.push(`sample ${samples}: ${n} active runs of ${BACKFILL_JOB} (maxConcurrent ${options.maxConcurrent})`);
      await sleep(SAMPLE_MS);
    }
  })();

  return {
    async settled() {
      await poll(
        async () => ((await readDates())?.dates.every((d) => ENDED_DATE_STATUSES.has(d.status)) ? true : undefined),
        500,
        Number.POSITIVE_INFINITY,
        world,
      );
    },

    async finish() {
      sampling = false;
      await sampler;
      const backfill = await readDates();
      const dates = backfill?.dates ?? [];
      const succeeded = new Set(dates.filter((d) => d.status === 'SUCCEEDED').map((d) => d.businessDate));
      const reasons = new Map<string, number>();
      for (const d of dates)
        if (d.status !== 'SUCCEEDED') reasons.set(`${d.status} ${d.reason}`, (reasons.get(`${d.status} ${d.reason}`) ?? 0) + 1);
      const { rows } = await world.db.query<{ n: number }>(
        'SELECT count(*)::int AS n FROM nifi_ops.gate_readiness_decision WHERE held_by_backfill = $1',
        [backfillId],
      );
      const heldDecisions = rows[0]!.n;

      let releasedAt = Number.POSITIVE_INFINITY;
      const releaseRefused: string[] = [];
      if (options.holdReadiness) {
        releasedAt = performance.now();
        const released = await world.client.call(
          'releaseBackfillReadiness',
          RELEASE_BACKFILL_READINESS,
          { input: { backfillId, reason: 'the backfill is complete and checked' } },
          { role: 'operator', key: ['backfill', 'release'] },
        );
        if (released.status !== 200) releaseRefused.push(`releaseBackfillReadiness answered ${released.status} ${released.code}`);
      }
      const readyDates = () => new Set(receiver.calls.filter((c) => c.ready).map((c) => c.businessDate));
      const deadline = Date.now() + RELEASE_PATIENCE_MS;
      while ([...succeeded].some((d) => !readyDates().has(d)) && Date.now() < deadline) await sleep(200);

      const readyCalls = new Map<string, Set<string>>();
      for (const c of receiver.calls.filter((call) => call.ready)) {
        readyCalls.set(c.businessDate, (readyCalls.get(c.businessDate) ?? new Set()).add(c.dispatchId));
      }
      console.log(
        `backfill: ${dates.length} dates (${backfill?.status}): SUCCEEDED ${succeeded.size}${[...reasons].map(([r, n]) => `, ${r} ${n}`).join('')}; ` +
          `peak ${peak} active runs of ${options.maxConcurrent} over ${samples} samples; ${heldDecisions} readiness decisions held, ` +
          `${receiver.calls.length} GATE_READY calls received`,
      );
      return [
        { name: 'backfill_concurrency_held', checked: samples, violations: overLimit },
        {
          name: 'backfill_dates_ended_with_reason',
          checked: dates.length,
          violations: [
            ...(dates.length === options.dates ? [] : [`${dates.length} dates of ${options.dates}`]),
            ...(backfill?.status === 'COMPLETED' ? [] : [`backfill ${backfill?.status ?? 'not found'}, not COMPLETED`]),
            ...dates
              .filter((d) => !ENDED_DATE_STATUSES.has(d.status) || (d.status !== 'SUCCEEDED' && !d.reason))
              .map((d) => `${d.businessDate}: ${d.status} ${d.reason ?? 'without a reason'}`),
          ],
        },
        {
          name: 'backfill_readiness_held_until_released',
          checked: heldDecisions,
          violations: [
            ...releaseRefused,
            ...receiver.calls
              .filter((c) => c.at < releasedAt && options.holdReadiness)
              .map((c) => `${c.businessDate}: GATE_READY ${c.dispatchId} (ready ${c.ready}) before the release`),
          ],
        },
        {
          name: 'backfill_readiness_pushed_once_per_ready_date',
          checked: succeeded.size,
          violations: [
            ...[...succeeded]
              .filter((d) => readyCalls.get(d)?.size !== 1)
              .map((d) => `${d}: ${readyCalls.get(d)?.size ?? 0} ready decisions pushed`),
            ...[...readyCalls.keys()].filter((d) => !succeeded.has(d)).map((d) => `${d}: pushed ready, but the date did not succeed`),
          ],
        },
      ];
    },

    close: () => receiver.close(),
  };
}
