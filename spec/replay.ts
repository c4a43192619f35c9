// Model-based testing: a trace of spec/load-control.qnt replayed step by step against a running Load Control.
// NiFi's and the operator's steps are GraphQL requests; the dispatcher's and the sweeper's are their domain
// functions; a tick of the model's clock moves every timestamp of the ledger one hour into the past. After each
// step the API's answer must be the model's `last.answer`, and the ledger the model's `ledger`.
import type { Config } from '../src/config/config.js';
import { decideDelivery, deferDispatch, markDead, markReceived, type DeliveryAttempt } from '../src/domain/dispatch/deliver.js';
import { cancelUnwantedDispatches, leaseDispatches, type LeasedDispatch } from '../src/domain/dispatch/lease.js';
import type { SweeperSettings } from '../src/domain/sweeper/settings.js';
import { sweepOnce } from '../src/domain/sweeper/sweep.js';
import { inStatement, inTransaction } from '../src/db/transaction.js';
import type { TestApi, TokenName } from '../test/support/api.js';
import {
  type CreatedRun,
  CANCEL_RUN,
  CLAIM,
  CLAIM_PUBLISH,
  CREATE_RUN,
  FAIL_PARTITION,
  FAIL_RUN,
  HDFS_ROOT,
  MARK_STAGE_VALIDATED,
  MARK_SUCCESS,
  RECORD_METRICS,
  REGISTER_MANIFEST,
  REISSUE_PARTITION,
  REPORT,
  REPORT_PUBLISH_RESULT,
  START_VALIDATION,
  chunkInput,
  manifestInput,
  metric,
} from '../test/support/fixtures.js';
import { DEFINE_GATE, PUBLISH, RECORD_OBSERVATION } from '../test/support/gate-fixtures.js';
import { RESEND_DISPATCH, RESOLVE_UNKNOWN } from '../test/support/ledger-flow.js';
import { keyOf, specConstant, type Trace, type Variant } from './quint.js';

/** The job, the upstream job, the gate bound to the job, and the consumer of both, for one business date. */
const JOB = 'SPEC_JOB';
const UPSTREAM = 'SPEC_UPSTREAM';
const GATE = 'SPEC_GATE';
const CONSUMER = 'SPEC_CONSUMER';
const BUSINESS_DATE = '2024-06-30';
const HOUR = 3_600_000;

const CHUNKS = specConstant('CHUNKS');
const PARTITIONS = specConstant('SOURCE') / CHUNKS;
/**
 * A threshold of T ticks, as a duration: half a tick short of T hours, so that whatever happened in the tick k
 * ticks ago is past it exactly when k >= T, however long the replay's own steps take (seconds, not half hours).
 */
const ticks = (name: string) => (specConstant(name) - 0.5) * HOUR;

/** The sweeper's and the dispatcher's settings that make the model's thresholds. */
export function replaySettings(config: Config): { sweeper: SweeperSettings; dispatch: Config['dispatch'] } {
  return {
    sweeper: {
      recovery: {
        ...config.recovery,
        mode: 'REISSUE',
        maxAttempts: specConstant('MAX_ATTEMPTS'),
        stale: ticks('STALE'),
        validationStale: ticks('VALIDATION_STALE'),
        publishStale: ticks('PUBLISH_STALE'),
        runTimeout: ticks('RUN_TIMEOUT'),
      },
      dispatch: { ackTimeout: ticks('ACK_TIMEOUT'), maxAttempts: specConstant('DISPATCH_ATTEMPTS') },
    },
    // a lease and a backoff expire within the tick after: longer than a replay's tick, shorter than an hour
    dispatch: {
      ...config.dispatch,
      maxAttempts: specConstant('DISPATCH_ATTEMPTS'),
      lease: HOUR / 2,
      backoffMin: HOUR / 6,
      backoffMax: HOUR / 2,
    },
  };
}

/** The ids the model counts up from 1, as UUIDs: claim tokens and publish tokens. */
const claimToken = (token: number) => `00000000-0000-4000-8000-${token.toString(16).padStart(12, '0')}`;
const publishToken = (token: number) => `00000000-0000-4000-9000-${token.toString(16).padStart(12, '0')}`;
const partitionIdOf = (partition: number) => String(partition - 1).padStart(4, '0');
const observationRunId = (attempt: number) => `${UPSTREAM}-attempt-${attempt}`;

/** What a step answered: the payload's fields the model states, or the error's code. */
type Answer = Record<string, unknown>;

/** Checks one step's answer or ledger against the model's; the test makes it an assertion naming trace and step. */
export type Check = (what: string, actual: unknown, expected: unknown) => void;

/** Where two values differ, one line per differing leaf: `partitions.1.token: API null, model "…"`. */
export function differences(actual: unknown, expected: unknown, path = ''): string[] {
  if (typeof actual === 'object' && actual !== null && typeof expected === 'object' && expected !== null) {
    const keys = [...new Set([...Object.keys(actual), ...Object.keys(expected)])];
    return keys.flatMap((k) =>
      differences((actual as Record<string, unknown>)[k], (expected as Record<string, unknown>)[k], path ? `${path}.${k}` : k),
    );
  }
  return Object.is(actual, expected) ? [] : [`${path || '(value)'}: API ${JSON.stringify(actual)}, model ${JSON.stringify(expected)}`];
}

/** A state of a trace, as spec/quint.ts decodes it: the variables of spec/load-control.qnt that the replay reads. */
interface ModelState {
  ledger: ModelLedger;
  last: { step: Variant; answer: Map<string, Variant> };
}
interface ModelLedger {
  runs: Map<
    number,
    { status: string; extracted: number; publishToken: number; claimEvidence: number; staleAlerts: Array<[string, number]> }
  >;
  /** Keyed by the JSON of (run, partition). */
  partitions: Map<string, { status: string; token: number; attempts: number; files: Map<number, { written: boolean }> }>;
  dispatches: Map<number, { runId: number; kind: string; partition: number; status: string; attempts: number }>;
  upstream: Map<number, string>;
  publication: { output: number; upstreamAttempt: number; loadRun: number };
}
/** The fields of the model's steps (type Step), each step having some of them. */
interface StepFields {
  key: number;
  runId: number;
  partition: number;
  worker: number;
  token: number;
  chunk: number;
  rows: number;
  valid: boolean;
  snapshotTooOld: boolean;
  dispatch: number;
  expected: string;
  failure: string;
  outcome: string;
  resolution: string;
  attempt: number;
  state: string;
  output: number;
  dispatcher: number;
  reply: string;
}

function expectedAnswer(last: ModelState['last']): Answer {
  return Object.fromEntries([...last.answer].map(([field, v]) => [field, v.value]));
}

/** A replay of one trace against `api`, whose database it empties first. */
export class Replay {
  /** The model's runs 1, 2, … as the API created them. */
  private readonly runIds = new Map<number, CreatedRun>();
  private readonly leases = new Map<number, LeasedDispatch[]>();

  constructor(
    private readonly api: TestApi,
    private readonly settings: ReturnType<typeof replaySettings>,
    private readonly ledgerTables: { truncate: string; age: string },
  ) {}

  /**
   * The statements that empty the ledger and age it by an hour: every nifi_ops table but the migration runner's,
   * every timestamp the system took from its clock (an observation's started_at is the producer's, not ours).
   */
  static async ledgerStatements(api: TestApi): Promise<{ truncate: string; age: string }> {
    const { rows } = await api.sql.query<{ table_name: string; columns: string[] }>(`
      SELECT t.table_name, array_remove(array_agg(c.column_name::text ORDER BY c.column_name), NULL) AS columns
        FROM information_schema.tables t
        LEFT JOIN information_schema.columns c ON c.table_schema = t.table_schema AND c.table_name = t.table_name
                                               AND c.data_type = 'timestamp with time zone'
                                               AND (c.table_name, c.column_name) <> ('gate_observation', 'started_at')
       WHERE t.table_schema = 'nifi_ops' AND t.table_type = 'BASE TABLE' AND t.table_name NOT LIKE 'lc\\_%'
       GROUP BY t.table_name ORDER BY t.table_name`);
    return {
      truncate: `TRUNCATE ${rows.map((r) => `nifi_ops.${r.table_name}`).join(', ')}`,
      age: rows
        .filter((r) => r.columns.length > 0)
        .map((r) => `UPDATE nifi_ops.${r.table_name} SET ${r.columns.map((c) => `${c} = ${c} - interval '1 hour'`).join(', ')}`)
        .join(';\n'),
    };
  }

  async replay(trace: Trace, check: Check): Promise<void> {
    this.runIds.clear();
    this.leases.clear();
    await this.api.sql.query(this.ledgerTables.truncate);
    for (const gate of [
      { consumer: GATE, requiredJobs: [UPSTREAM], boundJobKey: JOB },
      { consumer: CONSUMER, requiredJobs: [UPSTREAM, JOB] },
    ]) {
      const defined = await this.operator(DEFINE_GATE, { input: gate });
      if (defined.code !== undefined) throw new Error(`defineGate ${gate.consumer}: ${defined.code}`);
    }
    const states = trace.states as unknown as ModelState[];
    for (let i = 1; i < states.length; i++) {
      const { last, ledger } = states[i]!;
      const step = last.step;
      const where = `${trace.file} step ${i} ${step.tag} ${JSON.stringify(step.value, replacer)}`;
      const answer = await this.perform(step, states[i - 1]!.ledger);
      if (answer !== undefined) check(`${where}: the answer`, answer, expectedAnswer(last));
      check(`${where}: the ledger after it`, await this.actualLedger(), this.expectedLedger(ledger));
    }
  }

  /** Sends a step to the system; the answer, or undefined when the step is NiFi's alone. */
  private async perform(step: Variant, before: ModelLedger): Promise<Answer | undefined> {
    const s = step.value as unknown as StepFields;
    switch (step.tag) {
      case 'Tick':
        await this.api.sql.query(this.ledgerTables.age);
        await this.sweep();
        return undefined;
      case 'Sweep':
        await this.sweep();
        return undefined;
      case 'CreateRun': {
        const answer = await this.nifi(CREATE_RUN, {
          input: {
            jobKey: JOB,
            businessKey: BUSINESS_DATE,
            hdfsRoot: HDFS_ROOT,
            stageTablePrefix: 'TMP_SPEC_',
            idempotencyKey: `spec-flowfile-${s.key}`,
          },
        });
        if (answer.code !== undefined) return answer;
        // a replay names a run the model knows; a new run is the model's next (an unknown replay is then a mismatch)
        const model = [...this.runIds].find(([, real]) => real.runId === answer.runId)?.[0] ?? this.runIds.size + 1;
        if (answer.created === true) this.runIds.set(model, { ...(answer as unknown as CreatedRun), businessKey: BUSINESS_DATE });
        return { created: answer.created, runId: model, status: answer.status };
      }
      case 'RegisterManifest': {
        const input = manifestInput(this.run(s.runId).runId, Array(PARTITIONS).fill(CHUNKS));
        // an invalid plan: its partitions do not add up to its source count
        if (!s.valid) input.sourceCount = String(PARTITIONS * CHUNKS + 1);
        return this.nifi(REGISTER_MANIFEST, { input }, ['status', 'validationScheduled']);
      }
      case 'ClaimPartition':
        return this.nifi(CLAIM, { input: { ...this.claimOf(s), workerNode: `nifi-0${s.worker}` } }, [
          'claimed',
          'runStatus',
          'partitionStatus',
          'attempt',
        ]);
      case 'ReportChunk':
        return this.nifi(
          REPORT,
          { input: chunkInput(this.run(s.runId), partitionIdOf(s.partition), claimToken(s.token), s.chunk, CHUNKS, s.rows) },
          ['recorded', 'partitionStatus', 'runStatus', 'receivedChunks', 'validationScheduled'],
        );
      case 'FailPartition':
        return this.nifi(
          FAIL_PARTITION,
          {
            input: {
              ...this.claimOf(s),
              errorStage: 'EXTRACT',
              errorClass: 'java.sql.SQLException',
              errorCode: s.snapshotTooOld ? 'ORA-01555' : 'ORA-03113',
              message: s.snapshotTooOld ? 'snapshot too old' : 'end-of-file on communication channel',
            },
          },
          ['partitionStatus', 'runStatus', 'changed'],
        );
      // a transaction begins: the call is sent when it commits (its step then is the call's); under its locks nothing
      // it read changes meanwhile, not even by the sweeper at a tick between the two
      case 'Begin':
      case 'ReleaseWork':
      case 'DuplicateFlowFile':
      case 'DropFlowFile':
      case 'DispatcherCrash':
        if (step.tag === 'DispatcherCrash') this.leases.delete(s.dispatcher);
        return undefined;
      case 'StartValidation':
        return this.nifi(
          START_VALIDATION,
          { input: { runId: this.run(s.runId).runId, dispatchId: (await this.dispatch(before, s.dispatch)).dispatchId, node: 'nifi-01' } },
          ['started', 'runStatus'],
        );
      case 'StageValidated': {
        const runId = this.run(s.runId).runId;
        const metrics = [metric('STAGE_COUNT', 'PASS', String(PARTITIONS * CHUNKS)), metric('DUP_PK_COUNT')];
        const recorded = await this.nifi(RECORD_METRICS, { input: { runId, stage: 'STAGING', queryVersion: 'v1', metrics } });
        if (recorded.code !== undefined) return recorded;
        return this.nifi(MARK_STAGE_VALIDATED, { input: { runId } }, ['stageValidated', 'runStatus']);
      }
      case 'FailRun':
        return this.nifi(
          FAIL_RUN,
          {
            input: {
              runId: this.run(s.runId).runId,
              expectedStatus: s.expected,
              failStatus: s.failure,
              errorStage: 'SPEC',
              errorCode: 'STAGE_CHECK_FAILED',
              message: `a check of ${s.expected} failed`,
            },
          },
          ['runStatus', 'changed'],
        );
      case 'ClaimPublish':
        return this.nifi(CLAIM_PUBLISH, { input: { runId: this.run(s.runId).runId, publishToken: publishToken(s.token) } }, [
          'claimed',
          'runStatus',
        ]);
      case 'ReportPublishResult':
        return this.nifi(
          REPORT_PUBLISH_RESULT,
          {
            input: {
              runId: this.run(s.runId).runId,
              publishToken: publishToken(s.token),
              outcome: s.outcome,
              ...(s.outcome === 'PUBLISHED' ? {} : { errorCode: 'HIVE_ERROR', message: 'the INSERT OVERWRITE did not finish' }),
            },
          },
          ['runStatus', 'changed'],
        );
      case 'TargetValidated': {
        const runId = this.run(s.runId).runId;
        const rows = String(PARTITIONS * CHUNKS);
        const recorded = await this.nifi(RECORD_METRICS, {
          input: { runId, stage: 'TARGET', queryVersion: 'v1', metrics: [metric('TARGET_COUNT', 'PASS', rows)] },
        });
        if (recorded.code !== undefined) return recorded;
        return this.nifi(MARK_SUCCESS, { input: { runId, targetCount: rows } }, ['success', 'runStatus']);
      }
      case 'ResolveUnknown':
        return this.operator(
          RESOLVE_UNKNOWN,
          { input: { runId: this.run(s.runId).runId, resolution: s.resolution, reason: 'checked the target table' } },
          ['runStatus', 'changed'],
        );
      case 'CancelRun':
        return this.operator(CANCEL_RUN, { input: { runId: this.run(s.runId).runId, reason: 'the source is being repaired' } }, [
          'runStatus',
          'changed',
        ]);
      case 'ReissuePartition':
        return this.operator(
          REISSUE_PARTITION,
          { input: { runId: this.run(s.runId).runId, partitionId: partitionIdOf(s.partition), reason: 'the node is being drained' } },
          ['partitionStatus'],
        );
      case 'ResendDispatch': {
        const dispatch = await this.dispatch(before, s.dispatch);
        return this.operator(RESEND_DISPATCH, { input: { runId: dispatch.runId, dispatchId: dispatch.dispatchId } }, ['status']);
      }
      case 'RecordObservation':
        return this.nifi(
          RECORD_OBSERVATION,
          {
            input: {
              jobId: UPSTREAM,
              businessDate: BUSINESS_DATE,
              attempt: s.attempt,
              runId: observationRunId(s.attempt),
              state: s.state,
              startedAt: `${BUSINESS_DATE}T0${s.attempt}:00:00+00:00`,
            },
          },
          ['changed'],
        );
      case 'Publish':
        return this.nifi(PUBLISH, { input: { consumer: CONSUMER, businessDate: BUSINESS_DATE, output: { version: s.output } } }, [
          'published',
        ]);
      case 'Lease':
        return this.lease(s.dispatcher);
      case 'Deliver':
        await this.deliver(s.dispatcher, s.reply);
        return undefined;
      default:
        throw new Error(`the replay does not know the step ${step.tag}`);
    }
  }

  /** The run, partition and claim token a worker's call names. */
  private claimOf(s: StepFields): { runId: string; partitionId: string; claimToken: string } {
    return { runId: this.run(s.runId).runId, partitionId: partitionIdOf(s.partition), claimToken: claimToken(s.token) };
  }

  private run(model: number): CreatedRun {
    const run = this.runIds.get(model);
    if (!run) throw new Error(`run ${model} of the model was never created by the API`);
    return run;
  }

  private async call(token: TokenName, document: string, variables: Record<string, unknown>, fields?: string[]): Promise<Answer> {
    const res = await this.api.gql(document, variables, { token });
    if (res.body.errors?.length) return { code: res.code };
    const payload = Object.values(res.body.data ?? {})[0] as Record<string, unknown>;
    return fields ? Object.fromEntries(fields.map((f) => [f, payload[f]])) : payload;
  }

  private nifi(document: string, variables: Record<string, unknown>, fields?: string[]): Promise<Answer> {
    return this.call('nifi', document, variables, fields);
  }

  private operator(document: string, variables: Record<string, unknown>, fields?: string[]): Promise<Answer> {
    return this.call('operator', document, variables, fields);
  }

  private async sweep(): Promise<void> {
    const result = await inTransaction(this.api.db, (tx, afterCommit) => sweepOnce(tx, this.settings.sweeper, afterCommit));
    if (!result) throw new Error('another sweeper held the cycle');
    if (result.failures.length > 0)
      throw new Error(`sweeper rules failed: ${result.failures.map((f) => `${f.rule}: ${f.error}`).join('; ')}`);
  }

  /** The dispatcher's lease (src/worker/dispatcher.ts): due calls still wanted leased, the others cancelled. */
  private async lease(dispatcher: number): Promise<Answer> {
    const { batch, lease } = this.settings.dispatch;
    const { leased, unwanted } = await inStatement(this.api.db, (sql) =>
      leaseDispatches(sql, { batch, leaseMs: lease, alertReceivers: [], lineage: false, nifi: true }),
    );
    if (unwanted.length > 0)
      await inTransaction(this.api.db, (tx) =>
        cancelUnwantedDispatches(tx, unwanted, 'dispatcher', { alertReceivers: [], lineage: false }),
      );
    this.leases.set(dispatcher, leased);
    return { leased: leased.length };
  }

  /** What the dispatcher records of the replies to the calls it leased (src/worker/dispatcher.ts, deliver). */
  private async deliver(dispatcher: number, reply: string): Promise<void> {
    const attempt: DeliveryAttempt = {
      OK: { httpStatus: 202, responseText: '' },
      REJECTED: { httpStatus: 400, responseText: 'unknown job' },
      LOST: { httpStatus: null, error: 'TimeoutError: the receiver did not answer in time' },
      DOWN: { httpStatus: null, error: 'Error: connect ECONNREFUSED' },
    }[reply]!;
    for (const d of this.leases.get(dispatcher) ?? []) {
      const decision = decideDelivery(attempt, d.attempt, this.settings.dispatch);
      if (decision.action === 'SENT') {
        await inStatement(this.api.db, (sql) =>
          markReceived(sql, [{ dispatchId: d.dispatchId, dispatchType: d.dispatchType, httpStatus: decision.httpStatus }]),
        );
      } else if (decision.action === 'RETRY') {
        await inStatement(this.api.db, (sql) => deferDispatch(sql, d.dispatchId, decision));
      } else {
        const { dispatchId, runId, dispatchType, partitionId } = d;
        // the model's calls are NiFi's (VALIDATE_RUN, REISSUE_PARTITION): none is a gate's or an alert's
        const dead = {
          dispatchId,
          runId,
          gate: null,
          alert: null,
          dispatchType,
          partitionId,
          attempt: d.attempt,
          httpStatus: decision.httpStatus,
        };
        await inTransaction(this.api.db, (tx) => markDead(tx, { ...dead, error: decision.error, actor: 'dispatcher' }));
      }
    }
    this.leases.delete(dispatcher);
  }

  // ---- the ledger, as the model states it and as the database holds it ----

  private modelRun(runId: string): number {
    const model = [...this.runIds].find(([, real]) => real.runId === runId)?.[0];
    if (model === undefined) throw new Error(`run ${runId} is not one the model created`);
    return model;
  }

  /** The outbox in the model's terms: each call's run, kind, partition, and ordinal among those (seq). */
  private async dispatches(): Promise<Array<ModelDispatch & { runId: string; dispatchId: string }>> {
    const { rows } = await this.api.sql.query<{
      dispatch_id: string;
      run_id: string;
      dispatch_type: string;
      partition_id: string | null;
      seq: number;
      status: string;
      attempt_count: number;
    }>(`
      SELECT dispatch_id::text, run_id::text, dispatch_type, partition_id, status, attempt_count,
             row_number() OVER (PARTITION BY run_id, dispatch_type, partition_id ORDER BY created_at, dispatch_id)::int AS seq
        FROM nifi_ops.load_dispatch`);
    return rows
      .map((d) => ({
        run: this.modelRun(d.run_id),
        kind: d.dispatch_type,
        partition: d.partition_id === null ? 0 : Number(d.partition_id) + 1,
        seq: d.seq,
        status: d.status,
        attempts: d.attempt_count,
        runId: d.run_id,
        dispatchId: d.dispatch_id,
      }))
      .sort(byDispatch);
  }

  /** The real call of the model's dispatch `d` in the model's `ledger`: the same run, kind, partition and ordinal. */
  private async dispatch(ledger: ModelLedger, d: number): Promise<{ runId: string; dispatchId: string }> {
    const wanted = modelDispatches(ledger).find((x) => x.id === d);
    const found = (await this.dispatches()).find(
      (x) => x.run === wanted?.run && x.kind === wanted.kind && x.partition === wanted.partition && x.seq === wanted.seq,
    );
    if (!found) throw new Error(`dispatch ${d} of the model is not in the ledger`);
    return found;
  }

  private expectedLedger(ledger: ModelLedger) {
    const { runs, partitions, publication } = ledger;
    return {
      runs: [...runs]
        .sort(([a], [b]) => a - b)
        .map(([run, r]) => ({
          run,
          status: r.status,
          extracted: r.extracted,
          publishToken: r.publishToken === 0 ? null : publishToken(r.publishToken),
          claimEvidence: r.claimEvidence === 0 ? null : r.claimEvidence,
          staleAlerts: (r.staleAlerts as Array<[string, number]>).map(([status]) => status),
        })),
      partitions: [...partitions]
        .map(([key, p]) => {
          const [run, partition] = JSON.parse(key) as [number, number];
          const received = [...p.files.values()].filter((f) => f.written).length;
          return { run, partition, status: p.status, attempts: p.attempts, token: p.token === 0 ? null : claimToken(p.token), received };
        })
        .sort((a, b) => a.run - b.run || a.partition - b.partition),
      dispatches: modelDispatches(ledger)
        .map(({ id: _, ...d }) => d)
        .sort(byDispatch),
      observations: [...(ledger.upstream as Map<number, string>)]
        .map(([attempt, state]) => ({ attempt, state }))
        .sort((a, b) => a.attempt - b.attempt),
      publication:
        publication.output === 0
          ? null
          : {
              output: publication.output,
              evidence: [
                { jobId: JOB, attempt: publication.loadRun, runId: this.run(publication.loadRun).runId },
                { jobId: UPSTREAM, attempt: publication.upstreamAttempt, runId: observationRunId(publication.upstreamAttempt) },
              ],
            },
    };
  }

  private async actualLedger() {
    const q = async <R extends object>(text: string) => (await this.api.sql.query(text)).rows as R[];
    const runs = await q<{
      run_id: string;
      status: string;
      extracted: number;
      publish_token: string | null;
      claim_evidence: number | null;
      stale_alerts: string[];
    }>(`
      SELECT r.run_id::text, r.status, r.extracted_count::int AS extracted, r.publish_token::text,
             (SELECT e.attempt FROM nifi_ops.gate_publish_claim_evidence e WHERE e.run_id = r.run_id) AS claim_evidence,
             ARRAY(SELECT e.details ->> 'status' FROM nifi_ops.load_event e
                    WHERE e.run_id = r.run_id AND e.event_name = 'RUN_STALE_ALERT' ORDER BY e.event_time) AS stale_alerts
        FROM nifi_ops.load_run r`);
    const partitions = await q<{
      run_id: string;
      partition_id: string;
      status: string;
      attempt_count: number;
      claim_token: string | null;
      received_chunks: number;
    }>(`
      SELECT run_id::text, partition_id, status, attempt_count, claim_token::text, received_chunks FROM nifi_ops.load_partition`);
    const observations = await q<{ attempt: number; state: string }>(`
      SELECT attempt, state FROM nifi_ops.gate_observation ORDER BY attempt`);
    const [publication] = await q<{ output: { version: number } }>(`SELECT output FROM nifi_ops.gate_publication`);
    const evidence = await q<{ job_id: string; attempt: number; run_id: string }>(`
      SELECT job_id, attempt, run_id FROM nifi_ops.gate_publication_evidence ORDER BY job_id`);
    const dispatches = await this.dispatches();
    return {
      runs: runs
        .map((r) => ({
          run: this.modelRun(r.run_id),
          status: r.status,
          extracted: r.extracted,
          publishToken: r.publish_token,
          claimEvidence: r.claim_evidence,
          staleAlerts: r.stale_alerts,
        }))
        .sort((a, b) => a.run - b.run),
      partitions: partitions
        .map((p) => ({
          run: this.modelRun(p.run_id),
          partition: Number(p.partition_id) + 1,
          status: p.status,
          attempts: p.attempt_count,
          token: p.claim_token,
          received: p.received_chunks,
        }))
        .sort((a, b) => a.run - b.run || a.partition - b.partition),
      dispatches: dispatches.map(({ runId: _, dispatchId: __, ...d }) => d),
      observations,
      publication: publication
        ? { output: publication.output.version, evidence: evidence.map((e) => ({ jobId: e.job_id, attempt: e.attempt, runId: e.run_id })) }
        : null,
    };
  }
}

interface ModelDispatch {
  run: number;
  kind: string;
  /** 0 for a VALIDATE_RUN call. */
  partition: number;
  seq: number;
  status: string;
  attempts: number;
}

const byDispatch = (a: ModelDispatch, b: ModelDispatch) =>
  a.run - b.run || a.kind.localeCompare(b.kind) || a.partition - b.partition || a.seq - b.seq;

/** The model's outbox, each call with its id and its ordinal among the calls of its run, kind and partition. */
function modelDispatches(ledger: ModelLedger): Array<ModelDispatch & { id: number }> {
  const seqs = new Map<string, number>();
  return [...ledger.dispatches]
    .sort(([a], [b]) => a - b)
    .map(([id, d]) => {
      const of = `${d.runId}/${d.kind}/${d.partition}`;
      const seq = (seqs.get(of) ?? 0) + 1;
      seqs.set(of, seq);
      return { id, run: d.runId, kind: d.kind, partition: d.partition, seq, status: d.status, attempts: d.attempts };
    });
}

/** JSON of a step's parameters (Maps as objects). */
function replacer(_key: string, v: unknown): unknown {
  return v instanceof Map ? Object.fromEntries([...v].map(([k, x]) => [String(keyOf(k)), x])) : v;
}
