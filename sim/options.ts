// Command line of the simulator: npm run simulate -- --runs N --partitions P --chunks C --faults LIST --seed S
import { parseArgs } from 'node:util';
import { MAX_BACKFILL_CONCURRENCY, MAX_BACKFILL_DATES } from '../src/domain/backfills/plan-backfill.js';

const FAULTS = {
  'lost-response': 'a response is lost after the API committed; the client retries with the same tokens',
  duplicate:
    'a request is sent twice at once; FlowFiles are duplicated: a partition onto another node (its own claim token), a receiver call, a PG-50 publish (its own publish token)',
  'worker-crash': 'a PG-20 worker dies mid-partition; the sweeper must reissue the partition',
  'late-report': 'a PG-20 worker stalls past recovery.stale, is reissued, then reports with its old claim token',
  'source-failure': "a first run's source queries fail before the manifest: PG-10 fails the run (failRun)",
  'extract-failure': "a first run's Oracle query fails: PG-20 gives the partition up (failPartition), which fails the run",
  'last-chunk-race': "the last chunks of a run's partitions arrive at the same moment",
  'publish-unknown': 'PG-50 reports PUBLISH_UNKNOWN, or dies after claiming; a simulated operator resolves it',
  'receiver-5xx': "the PG-05 receiver answers the worker's calls with 5xx, now and then 404 (DEAD until resent)",
  'receiver-timeout': 'the PG-05 receiver answers after the worker gave up, or accepts a call and loses it',
  'api-kill': 'an API process is killed with SIGKILL and restarted mid-run',
  'worker-kill': 'a worker process (dispatcher + sweeper) is killed with SIGKILL and restarted',
  'pg-terminate': "the API's and the worker's database connections are terminated with pg_terminate_backend",
} as const;

export type Fault = keyof typeof FAULTS;
const FAULT_NAMES = Object.keys(FAULTS) as Fault[];

export interface SimOptions {
  /** Business keys to load; a failed or cancelled run is followed by a new run for its key. */
  runs: number;
  partitions: number;
  /** Chunks per partition (each partition varies around it). */
  chunks: number;
  faults: ReadonlySet<Fault>;
  seed: number;
  apis: number;
  workers: number;
  /** Business keys in flight at once. */
  concurrency: number;
  /** The simulation stops driving after this many seconds and checks what it has. */
  timeoutSeconds: number;
  /** `source` runs src/cli.ts through tsx (what is in the tree); `dist` runs the build. */
  cli: 'source' | 'dist';
  verbose: boolean;
  /** The ungated jobs share one source pool of this limit (sim/pools.ts); null: no pool. */
  poolLimit: number | null;
  /** With --backfill-dates: a backfill of that many dates of its own job runs alongside (sim/backfill.ts). */
  backfill: { dates: number; maxConcurrent: number; holdReadiness: boolean } | null;
}

export const USAGE = `usage: npm run simulate -- [options]

  --runs N          business keys to load (default 40)
  --partitions P    partitions per manifest (default 8)
  --chunks C        chunks per partition, varied around C (default 4)
  --faults LIST     comma-separated fault names, "all" or "none" (default all)
  --seed S          seed of every fault decision (default 1)
  --apis N          API processes behind the simulated load balancer (default 2)
  --workers N       worker processes (default 2)
  --concurrency N   business keys in flight at once (default 12)
  --timeout SEC     stop driving after SEC seconds (default 60 + 2 per business key and backfill date)
  --cli source|dist run the API and worker from src/ through tsx (default) or from dist/
  --verbose         log every fault and flow step
  --pool-limit N    the ungated jobs share a source pool of N RUNNING partitions, its use sampled (default none)
  --backfill-dates N              a backfill of N business dates of its own job runs alongside (default none)
  --backfill-max-concurrent M     the backfill's maxConcurrent (default 3)
  --backfill-hold-readiness       start it with pushReadiness false and release its readiness once it completed

faults:
${FAULT_NAMES.map((f) => `  ${f.padEnd(17)} ${FAULTS[f]}`).join('\n')}

DATABASE_URL names the PostgreSQL server (a fresh database is created on it); without it an embedded
PostgreSQL is started. Exit code 0 when every invariant holds, 1 on any violation, 2 on bad usage.`;

class UsageError extends Error {}

function positiveInt(name: string, value: string | undefined, fallback: number, max = 1_000_000): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > max) throw new UsageError(`--${name}: must be an integer between 1 and ${max}`);
  return n;
}

function parseFaults(list: string): Set<Fault> {
  const names = list
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (names.length === 1 && names[0] === 'all') return new Set(FAULT_NAMES);
  if (names.length === 1 && names[0] === 'none') return new Set();
  const unknown = names.filter((n) => !(n in FAULTS));
  if (unknown.length) throw new UsageError(`--faults: unknown ${unknown.join(', ')} (known: ${FAULT_NAMES.join(', ')}, all, none)`);
  return new Set(names as Fault[]);
}

export function parseOptions(argv: string[]): SimOptions | 'help' {
  const { values } = parseArgs({
    args: argv,
    options: {
      runs: { type: 'string' },
      partitions: { type: 'string' },
      chunks: { type: 'string' },
      faults: { type: 'string' },
      seed: { type: 'string' },
      apis: { type: 'string' },
      workers: { type: 'string' },
      concurrency: { type: 'string' },
      timeout: { type: 'string' },
      'pool-limit': { type: 'string' },
      'backfill-dates': { type: 'string' },
      'backfill-max-concurrent': { type: 'string' },
      'backfill-hold-readiness': { type: 'boolean' },
      cli: { type: 'string' },
      verbose: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
  });
  if (values.help) return 'help';
  const seed = values.seed === undefined ? 1 : Number(values.seed);
  if (!Number.isInteger(seed) || seed < 0 || seed > 2 ** 32 - 1)
    throw new UsageError('--seed: must be an integer between 0 and 4294967295');
  if (values.cli !== undefined && values.cli !== 'source' && values.cli !== 'dist') throw new UsageError('--cli: source or dist');
  const runs = positiveInt('runs', values.runs, 40, 10_000);
  const backfillDates =
    values['backfill-dates'] === undefined ? 0 : positiveInt('backfill-dates', values['backfill-dates'], 30, MAX_BACKFILL_DATES);
  if (values['backfill-dates'] === undefined && (values['backfill-max-concurrent'] !== undefined || values['backfill-hold-readiness']))
    throw new UsageError('--backfill-max-concurrent and --backfill-hold-readiness need --backfill-dates');
  return {
    runs,
    partitions: positiveInt('partitions', values.partitions, 8, 9_999),
    chunks: positiveInt('chunks', values.chunks, 4, 1_000),
    faults: parseFaults(values.faults ?? 'all'),
    seed,
    apis: positiveInt('apis', values.apis, 2, 8),
    workers: positiveInt('workers', values.workers, 2, 8),
    concurrency: positiveInt('concurrency', values.concurrency, 12, 1_000),
    timeoutSeconds: positiveInt('timeout', values.timeout, 60 + 2 * (runs + backfillDates), 86_400),
    cli: values.cli ?? 'source',
    verbose: values.verbose ?? false,
    poolLimit: values['pool-limit'] === undefined ? null : positiveInt('pool-limit', values['pool-limit'], 1, 1_000),
    backfill:
      values['backfill-dates'] === undefined
        ? null
        : {
            dates: backfillDates,
            maxConcurrent: positiveInt('backfill-max-concurrent', values['backfill-max-concurrent'], 3, MAX_BACKFILL_CONCURRENCY),
            holdReadiness: values['backfill-hold-readiness'] ?? false,
          },
  };
}
