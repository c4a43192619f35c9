// npm run demo — fills a RUNNING Load Control with something to look at, through its API as NiFi and an operator
// would: a few days of history for four jobs, then today's runs paced so that a newcomer can watch them move in
// the console (one through every stage, one that fails, one PUBLISH_UNKNOWN, one still extracting), a gate that
// becomes ready, and a DEAD call (the gate's receiver answers 410 Gone). About 40 seconds.
//
// It refuses an instance that does not say it is a development one (`npm start` on its embedded database: its
// /auth/session names the development tokens' file) unless given --yes. The token: --token or LC_TOKEN, else
// dev-operator's from .data/dev-tokens.json (operator and nifi roles).
import { randomUUID } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { type Document, documentText } from '../schema/documents/graphql.js';
import { NIFI_REQUESTS } from '../schema/documents/nifi.js';
import * as operator from '../schema/documents/operator.js';

const DEV_TOKENS = fileURLToPath(new URL('../.data/dev-tokens.json', import.meta.url));
const DEMO_JOB_PREFIX = 'DEMO_';
const JOBS = {
  orders: 'DEMO_ORDERS',
  customers: 'DEMO_CUSTOMERS',
  payments: 'DEMO_PAYMENTS',
  refunds: 'DEMO_REFUNDS',
  mart: 'DEMO_SALES_MART',
};
const CONSUMER = 'demo_sales_mart';
const HISTORY_DAYS = 4;

const ACTIVE_DEMO_RUNS = `query($first: Int) {
  runs(filter: { jobKeyContains: "${DEMO_JOB_PREFIX}", activeOnly: true }, first: $first) { nodes { runId jobKey businessKey status } } }`;
const RUN_DISPATCHES = `query($runId: UUID!) { run(runId: $runId) { status dispatches { dispatchId dispatchType status } } }`;
const RUNS_OF_KEY = `query($jobKey: String!, $businessKey: String!) {
  runs(filter: { jobKey: $jobKey, businessKey: $businessKey }, first: 1) { nodes { runId } } }`;
const PROCESSES = `{ processes { state role } }`;
const GATE_CALLS = `query($consumer: String!) { gate(consumer: $consumer) { dispatches(last: 20) { dispatchId businessDate status } } }`;

class DemoRefused extends Error {}

interface Options {
  url: string;
  token: string;
  /** Multiplies every pause (0: as fast as the API answers, for tests). */
  pace: number;
  out: (line: string) => void;
}

type Variables = Record<string, unknown>;

function client({ url, token }: Options) {
  return async <T = Record<string, any>>(document: Document | string, variables: Variables = {}): Promise<T> => {
    const query = typeof document === 'string' ? document : documentText(document);
    const response = await fetch(new URL('/graphql', url), {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${token}` },
      body: JSON.stringify({ query, variables }),
    });
    const body = (await response.json()) as {
      data?: Record<string, unknown>;
      errors?: Array<{ message: string; extensions?: { code?: string } }>;
    };
    if (body.errors?.length) {
      const [first] = body.errors;
      throw new Error(`${query.trim().split(/[({]/)[0]}: HTTP ${response.status} ${first!.extensions?.code ?? ''} ${first!.message}`);
    }
    return Object.values(body.data ?? {})[0] as T;
  };
}

type Gql = ReturnType<typeof client>;

const partitionId = (i: number) => String(i).padStart(4, '0');

function manifest(runId: string, counts: number[]): Variables {
  return {
    runId,
    snapshotScn: String(9_000_000_000 + Math.floor(Math.random() * 1_000_000)),
    sourceCount: String(counts.reduce((a, b) => a + b, 0)),
    sourceNullSplitCount: '0',
    sourceMinSplit: '1',
    sourceMaxSplit: String(1 + counts.length * 1000),
    plannedPartitionCount: String(counts.length),
    sourceMetrics: {},
    partitions: counts.map((rows, i) => ({
      partitionId: partitionId(i),
      lowerBound: String(1 + i * 1000),
      upperBound: String(1 + (i + 1) * 1000),
      upperInclusive: i === counts.length - 1,
      isNullPartition: false,
      expectedRowCount: String(rows),
    })),
  };
}

/** A run as NiFi drives it, step by step; each step waits `pause` (× pace) first so the console shows it move. */
class DemoRun {
  runId = '';
  hdfsRunPath = '';
  private readonly counts: number[];

  constructor(
    private readonly gql: Gql,
    private readonly options: Options,
    readonly jobKey: string,
    readonly businessKey: string,
    partitions: number,
  ) {
    this.counts = Array.from({ length: partitions }, (_, i) => 40_000 + ((i * 7919) % 20_000));
  }

  private pause(ms: number) {
    return new Promise((resolve) => setTimeout(resolve, ms * this.options.pace));
  }

  get rows(): number {
    return this.counts.reduce((a, b) => a + b, 0);
  }

  async create(): Promise<this> {
    const created = await this.gql<{ runId: string; hdfsRunPath: string }>(NIFI_REQUESTS['PG-10/createRun'], {
      input: {
        jobKey: this.jobKey,
        businessKey: this.businessKey,
        hdfsRoot: '/data/nifi/stage',
        stageTablePrefix: `TMP_${this.jobKey}_`,
        idempotencyKey: randomUUID(),
      },
    });
    this.runId = created.runId;
    this.hdfsRunPath = created.hdfsRunPath;
    await this.gql(NIFI_REQUESTS['PG-10/registerManifest'], { input: manifest(this.runId, this.counts) });
    return this;
  }

  /** Claims and reports partitions [from, to) in two chunks each, `stepMs` between partitions. */
  async extract(from = 0, to = this.counts.length, stepMs = 0): Promise<void> {
    for (let i = from; i < to; i++) {
      await this.pause(stepMs);
      const claimToken = randomUUID();
      await this.gql(NIFI_REQUESTS['PG-20/claimPartition'], {
        input: { runId: this.runId, partitionId: partitionId(i), claimToken, workerNode: 'nifi-demo-01' },
      });
      for (const chunkIndex of [0, 1]) {
        const rows = chunkIndex === 0 ? Math.floor(this.counts[i]! / 2) : Math.ceil(this.counts[i]! / 2);
        await this.gql(NIFI_REQUESTS['PG-20/reportChunk'], {
          input: {
            runId: this.runId,
            partitionId: partitionId(i),
            claimToken,
            chunkIndex: String(chunkIndex),
            chunkCount: '2',
            fragmentIdentifier: `frag-${partitionId(i)}`,
            recordCount: String(rows),
            byteCount: String(rows * 120),
            hdfsPath: `${this.hdfsRunPath}/part-${partitionId(i)}-${String(chunkIndex).padStart(6, '0')}.parquet`,
          },
        });
      }
    }
  }

  /** The VALIDATE_RUN call NiFi got: startValidation, STAGING metrics, markStageValidated. */
  async validate(stepMs = 0): Promise<void> {
    await this.pause(stepMs);
    const { dispatches } = await this.gql<{ dispatches: Array<{ dispatchId: string; dispatchType: string }> }>(RUN_DISPATCHES, {
      runId: this.runId,
    });
    const dispatch = dispatches.find((d) => d.dispatchType === 'VALIDATE_RUN')!;
    await this.gql(NIFI_REQUESTS['PG-40/startValidation'], {
      input: { runId: this.runId, dispatchId: dispatch.dispatchId, node: 'nifi-demo-01' },
    });
    await this.pause(stepMs);
    await this.gql(NIFI_REQUESTS['PG-40/recordMetrics'], {
      input: {
        runId: this.runId,
        stage: 'STAGING',
        queryVersion: 'v1',
        metrics: [
          { metricName: 'STAGE_COUNT', result: 'PASS', expectedValue: String(this.rows), actualValue: String(this.rows) },
          { metricName: 'DUP_PK_COUNT', result: 'PASS', expectedValue: '0', actualValue: '0' },
        ],
      },
    });
    await this.gql(NIFI_REQUESTS['PG-40/markStageValidated'], { input: { runId: this.runId } });
  }

  async publish(outcome: 'PUBLISHED' | 'PUBLISH_UNKNOWN', stepMs = 0): Promise<void> {
    await this.pause(stepMs);
    const publishToken = randomUUID();
    await this.gql(NIFI_REQUESTS['PG-50/claimPublish'], { input: { runId: this.runId, publishToken } });
    await this.pause(stepMs);
    await this.gql(NIFI_REQUESTS['PG-50/reportPublishResult'], {
      input: {
        runId: this.runId,
        publishToken,
        outcome,
        ...(outcome === 'PUBLISH_UNKNOWN'
          ? {
              errorCode: 'HIVE_TIMEOUT',
              message: 'HiveServer2 closed the session during INSERT OVERWRITE',
              queryId: `hive_${randomUUID().slice(0, 8)}`,
            }
          : {}),
      },
    });
  }

  async succeed(stepMs = 0): Promise<void> {
    await this.pause(stepMs);
    await this.gql(NIFI_REQUESTS['PG-60/recordMetrics'], {
      input: {
        runId: this.runId,
        stage: 'TARGET',
        queryVersion: 'v1',
        metrics: [{ metricName: 'TARGET_COUNT', result: 'PASS', expectedValue: String(this.rows), actualValue: String(this.rows) }],
      },
    });
    await this.gql(NIFI_REQUESTS['PG-60/markSuccess'], { input: { runId: this.runId, targetCount: String(this.rows) } });
  }

  async fail(errorCode: string, message: string): Promise<void> {
    await this.gql(NIFI_REQUESTS['PG-90/recordEvent'], {
      input: {
        runId: this.runId,
        level: 'ERROR',
        name: 'EXTRACT_FAILED',
        partitionId: partitionId(3),
        errorCode,
        message,
        processGroup: 'PG-20',
      },
    });
    await this.gql(NIFI_REQUESTS['PG-90/failRun'], {
      input: { runId: this.runId, expectedStatus: 'EXTRACTING', failStatus: 'FAILED_EXTRACT', errorStage: 'EXTRACT', errorCode, message },
    });
  }

  async toSuccess(stepMs = 0): Promise<this> {
    await this.extract(0, this.counts.length, stepMs);
    await this.validate(stepMs);
    await this.publish('PUBLISHED', stepMs);
    await this.succeed(stepMs);
    return this;
  }
}

function day(offset: number): string {
  const d = new Date();
  d.setUTCDate(d.getUTCDate() + offset);
  return d.toISOString().slice(0, 10);
}

/** A receiver for the gate's calls that answers 410 Gone: a permanent refusal, so each call is DEAD at once. */
async function goneReceiver(): Promise<{ url: string; close(): Promise<void> }> {
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(410, { 'Content-Type': 'text/plain' }).end('this receiver is gone (Load Control demo)'));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/sales-mart-ready`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/** Ends what an earlier demo left active (its PUBLISH_UNKNOWN and extracting runs) so today's keys are free again. */
async function endEarlierDemo(gql: Gql, out: Options['out']): Promise<void> {
  const active = await gql<{ nodes: Array<{ runId: string; jobKey: string; status: string }> }>(ACTIVE_DEMO_RUNS, { first: 100 });
  for (const run of active.nodes) {
    if (run.status === 'PUBLISH_UNKNOWN') {
      await gql(operator.RESOLVE_UNKNOWN, {
        input: { runId: run.runId, resolution: 'FAILED_PUBLISH', reason: 'a new demo starts; the old one is set aside' },
      });
    } else {
      await gql(operator.CANCEL_RUN, { input: { runId: run.runId, reason: 'a new demo starts; the old one is set aside' } }).catch(
        () => null,
      );
    }
  }
  if (active.nodes.length) out(`Ended ${active.nodes.length} run(s) an earlier demo left active.`);
}

async function runDemo(options: Options): Promise<void> {
  const gql = client(options);
  const { out } = options;
  const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms * options.pace));
  // every worker (`start`, `work`) delivers the gates' calls, with or without NiFi's receiver
  const processes = await gql<Array<{ state: string; role: string }>>(PROCESSES);
  const delivers = processes.some((p) => p.state === 'LIVE' && p.role !== 'serve');
  await endEarlierDemo(gql, out);

  const receiver = await goneReceiver();
  try {
    await gql(operator.DEFINE_GATE, {
      input: { consumer: CONSUMER, requiredJobs: [JOBS.orders, JOBS.customers], boundJobKey: JOBS.mart, notifyUrl: receiver.url },
    });
    out(`Gate ${CONSUMER}: ${JOBS.mart} waits for ${JOBS.orders} and ${JOBS.customers}; its receiver answers 410 Gone.`);

    const history = await gql<{ nodes: unknown[] }>(RUNS_OF_KEY, { jobKey: JOBS.orders, businessKey: day(-1) });
    if (history.nodes.length) out('History: already there from an earlier demo.');
    else out(`History: ${HISTORY_DAYS} business dates of ${Object.keys(JOBS).length} jobs…`);
    for (let offset = history.nodes.length ? 0 : -HISTORY_DAYS; offset < 0; offset++) {
      const date = day(offset);
      await new DemoRun(gql, options, JOBS.orders, date, 4).create().then((r) => r.toSuccess());
      await new DemoRun(gql, options, JOBS.customers, date, 3).create().then((r) => r.toSuccess());
      if (offset === -2) {
        const failed = await new DemoRun(gql, options, JOBS.payments, date, 5).create();
        await failed.extract(0, 2);
        await failed.fail('ORA-01555', 'snapshot too old: rollback segment too small');
      }
      await new DemoRun(gql, options, JOBS.payments, date, 5).create().then((r) => r.toSuccess());
      await new DemoRun(gql, options, JOBS.mart, date, 2).create().then((r) => r.toSuccess());
    }

    const today = day(0);
    out(`Today (${today}), paced to be watched: open the console's Jobs page or the gate ${CONSUMER}.`);
    const orders = await new DemoRun(gql, options, JOBS.orders, today, 12).create();
    const customers = await new DemoRun(gql, options, JOBS.customers, today, 8).create();
    const payments = await new DemoRun(gql, options, JOBS.payments, today, 6).create();
    const refunds = await new DemoRun(gql, options, JOBS.refunds, today, 6).create();
    out(`  runs created: ${[orders, customers, payments, refunds].map((r) => `${r.jobKey} ${r.runId.slice(0, 8)}`).join(', ')}`);
    await Promise.all([
      orders.toSuccess(1200).then(() => out(`  ${JOBS.orders} ${today}: SUCCESS`)),
      customers.toSuccess(1800).then(() => out(`  ${JOBS.customers} ${today}: SUCCESS — the gate is ready for ${today}`)),
      payments
        .extract(0, 6, 1500)
        .then(() => payments.validate(1500))
        .then(() => payments.publish('PUBLISH_UNKNOWN', 2000))
        .then(() => out(`  ${JOBS.payments} ${today}: PUBLISH_UNKNOWN — an operator decides it on its run page`)),
      refunds
        .extract(0, 3, 2000)
        .then(() => pause(2000))
        .then(() => refunds.fail('ORA-01013', 'user requested cancel of current operation'))
        .then(() => out(`  ${JOBS.refunds} ${today}: FAILED_EXTRACT`)),
    ]);
    const mart = await new DemoRun(gql, options, JOBS.mart, today, 10).create();
    await mart.extract(0, 4, 1000);
    out(`  ${JOBS.mart} ${today}: started once the gate was ready, left extracting (4 of 10 partitions)`);

    if (delivers) {
      // the worker delivers the gate's calls; the receiver refuses each for good
      for (let waited = 0; waited < 30_000; waited += 500) {
        const gate = await gql<{ dispatches: Array<{ status: string }> }>(GATE_CALLS, { consumer: CONSUMER });
        if (gate.dispatches.some((d) => d.status === 'DEAD')) break;
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
      out(`  the gate's calls to ${receiver.url}: DEAD (410 Gone), each an alert`);
    } else {
      out('  no worker runs here (`load-control work` or `start`), so the gate’s calls wait in the outbox instead of going DEAD');
    }
  } finally {
    await receiver.close();
  }
  out(`Done. Console: ${new URL('/jobs', options.url).href}`);
}

async function main(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: { url: { type: 'string' }, token: { type: 'string' }, yes: { type: 'boolean' }, pace: { type: 'string' } },
  });
  const url = values.url ?? process.env.LC_URL ?? 'http://127.0.0.1:8080';
  const pace = values.pace === undefined ? 1 : Number(values.pace);
  if (!Number.isFinite(pace) || pace < 0) throw new DemoRefused('--pace: a number ≥ 0 (0: no pauses)');
  const session = (await (await fetch(new URL('/auth/session', url))).json()) as { devTokensFile?: string | null };
  if (!session.devTokensFile && !values.yes) {
    throw new DemoRefused(
      `${url} does not say it is a development instance (npm start on its embedded database): the demo writes runs, a gate ` +
        'and decisions into its ledger. Give --yes to fill it anyway.',
    );
  }
  let token = values.token ?? process.env.LC_TOKEN;
  if (!token && existsSync(DEV_TOKENS)) {
    const tokens = JSON.parse(readFileSync(DEV_TOKENS, 'utf8')) as Array<{ name: string; token: string }>;
    token = tokens.find((t) => t.name === 'dev-operator')?.token;
  }
  if (!token) throw new DemoRefused('a token with the operator and nifi roles is needed: --token or LC_TOKEN (or .data/dev-tokens.json)');
  await runDemo({ url, token, pace, out: console.log });
  return 0;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  main(process.argv.slice(2)).then(
    (code) => {
      process.exitCode = code;
    },
    (error: unknown) => {
      console.error(error instanceof Error ? error.message : error);
      process.exitCode = error instanceof DemoRefused ? 2 : 1;
    },
  );
}
