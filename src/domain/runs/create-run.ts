import { createHash, randomUUID } from 'node:crypto';
import type { AfterCommit } from '../../db/after-commit.js';
import type { Tx } from '../../db/client.js';
import { DomainError, invalidInput } from '../../contract/errors.js';
import { recordApiEvent } from '../events/events.js';
import { climbsOut } from '../fields.js';
import { acknowledgeBackfillStart } from '../backfills/backfill-start-ack.js';
import { assertRunGateReady, refusableByGate } from '../gate/run-gate.js';
import { assertJobNotPaused } from '../jobs/job-pause.js';
import { ACTIVE_RUN_STATUSES, parseRunStatus, type RunStatus } from '../states.js';
import { inOneTransaction } from '../../db/operation.js';

export interface CreateRunCommand {
  jobKey: string;
  businessKey: string;
  hdfsRoot: string;
  stageTablePrefix: string;
  allowEmptySource: boolean;
  parameters: Record<string, unknown>;
  idempotencyKey: string | null;
  /** A backfill's date started by its START_LOAD call: the run is the backfill's, and the call's ACK. */
  backfillId?: string | null;
  /** key → value (fields.ts's tags); none when left out. */
  tags?: Record<string, string>;
  /** The NiFi flow that asks for the run: its registry client, bucket, flow id and version, each when PG-10 knows it. */
  flowRegistry?: string | null;
  flowBucket?: string | null;
  flowId?: string | null;
  flowVersion?: string | null;
  actor: string;
}

export interface CreateRunResult {
  runId: string;
  status: RunStatus;
  hdfsRunPath: string;
  stageTable: string;
  created: boolean;
}

const HDFS_RUN_PATH_MAX = 1000;

function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

/**
 * What an idempotent replay must repeat exactly: every field of the request except the key itself. Tags and the
 * flow's coordinates are part of the request (a retry of one FlowFile sends the same), but only when given, so
 * that a request without them has the digest it had before they existed (a replay across the upgrade).
 */
function requestDigest(cmd: CreateRunCommand): string {
  const { jobKey, businessKey, hdfsRoot, stageTablePrefix, allowEmptySource, parameters } = cmd;
  const { backfillId, tags, flowRegistry, flowBucket, flowId, flowVersion } = cmd;
  const optional = { backfillId, tags: tags && Object.keys(tags).length ? tags : null, flowRegistry, flowBucket, flowId, flowVersion };
  const given = Object.fromEntries(Object.entries(optional).filter(([, v]) => v !== null && v !== undefined));
  return createHash('sha256')
    .update(canonicalJson({ jobKey, businessKey, hdfsRoot, stageTablePrefix, allowEmptySource, parameters, ...given }))
    .digest('hex');
}

function hdfsRunPathFor(hdfsRoot: string, jobKey: string, runId: string): string {
  return `${hdfsRoot.replace(/\/+$/, '')}/${jobKey}/run_id=${runId}`;
}

/**
 * createRun (ref §3.1 + deviation 1): one active run per job and business key; safe to retry with a key. A
 * gated job's run waits for its gate: the refusal undoes the run and is recorded (refusableByGate).
 */
export function createRun(tx: Tx, cmd: CreateRunCommand, afterCommit: AfterCommit): Promise<CreateRunResult> {
  return refusableByGate(tx, afterCommit, () => insertRun(tx, cmd));
}

async function insertRun(tx: Tx, cmd: CreateRunCommand): Promise<CreateRunResult> {
  if (climbsOut(cmd.hdfsRoot)) throw new DomainError('INVALID_HDFS_ROOT', { hdfsRoot: cmd.hdfsRoot });
  const runId = randomUUID();
  const hdfsRunPath = hdfsRunPathFor(cmd.hdfsRoot, cmd.jobKey, runId);
  if (hdfsRunPath.length > HDFS_RUN_PATH_MAX) {
    throw invalidInput('input.hdfsRoot', `the run path would exceed ${HDFS_RUN_PATH_MAX} characters`);
  }
  const stageTable = (cmd.stageTablePrefix + runId.replaceAll('-', '')).toLowerCase();
  const parameters = { ...cmd.parameters, allowEmptySource: cmd.allowEmptySource };
  const digest = requestDigest(cmd);

  // ON CONFLICT DO NOTHING covers every unique index (active key, idempotency key) without aborting the
  // transaction; a conflicting concurrent insert is waited for, so the lookups below see it committed.
  const inserted = await tx.$queryRaw<Array<{ run_id: string }>>`
    INSERT INTO nifi_ops.load_run (run_id, job_key, business_key, status, hdfs_run_path, stage_table_name, parameters,
        idempotency_key, request_digest, created_by, backfill_id, tags, flow_registry, flow_bucket, flow_id, flow_version)
    VALUES (${runId}::uuid, ${cmd.jobKey}, ${cmd.businessKey}, 'CREATED', ${hdfsRunPath}, ${stageTable},
        ${JSON.stringify(parameters)}::jsonb, ${cmd.idempotencyKey}, ${digest}, ${cmd.actor}, ${cmd.backfillId ?? null}::uuid,
        ${JSON.stringify(cmd.tags ?? {})}::jsonb, ${cmd.flowRegistry ?? null}, ${cmd.flowBucket ?? null}, ${cmd.flowId ?? null},
        ${cmd.flowVersion ?? null})
    ON CONFLICT DO NOTHING
    RETURNING run_id`;

  if (inserted.length === 0) {
    if (cmd.idempotencyKey !== null) {
      const [replay] = await tx.$queryRaw<
        Array<{ runId: string; status: string; hdfsRunPath: string | null; stageTableName: string | null; requestDigest: string | null }>
      >`
        SELECT run_id AS "runId", status, hdfs_run_path AS "hdfsRunPath", stage_table_name AS "stageTableName",
               request_digest AS "requestDigest"
          FROM nifi_ops.load_run WHERE idempotency_key = ${cmd.idempotencyKey}`;
      if (replay) {
        if (replay.requestDigest !== digest) {
          throw new DomainError('IDEMPOTENCY_KEY_REUSED', { idempotencyKey: cmd.idempotencyKey, runId: replay.runId });
        }
        return {
          runId: replay.runId,
          status: parseRunStatus(replay.status),
          hdfsRunPath: replay.hdfsRunPath ?? '',
          stageTable: replay.stageTableName ?? '',
          created: false,
        };
      }
    }
    const active = await tx.$queryRaw<Array<{ run_id: string }>>`
      SELECT run_id::text FROM nifi_ops.load_run
       WHERE job_key = ${cmd.jobKey} AND business_key = ${cmd.businessKey}
         AND status = ANY(${ACTIVE_RUN_STATUSES}::text[])`;
    throw new DomainError('DUPLICATE_ACTIVE_RUN', {
      jobKey: cmd.jobKey,
      businessKey: cmd.businessKey,
      activeRunId: active[0]?.run_id ?? null,
    });
  }

  // after the insert, so that replays and duplicates are answered as before; a refusal rolls the run back
  await assertJobNotPaused(tx, cmd.jobKey);
  await tx.$executeRaw`SELECT nifi_ops.fault_point('create_run_job_checked')`;
  if (cmd.backfillId) {
    await acknowledgeBackfillStart(tx, { backfillId: cmd.backfillId, jobKey: cmd.jobKey, businessKey: cmd.businessKey, runId });
  }
  await assertRunGateReady(tx, { jobKey: cmd.jobKey, businessKey: cmd.businessKey, runId: null, actor: cmd.actor });

  await recordApiEvent(tx, {
    level: 'INFO',
    name: 'RUN_STARTED',
    runId,
    actor: cmd.actor,
    details: { idempotencyKey: cmd.idempotencyKey, ...(cmd.backfillId ? { backfillId: cmd.backfillId } : {}) },
  });
  return { runId, status: 'CREATED', hdfsRunPath, stageTable, created: true };
}

export const createRunOperation = inOneTransaction(createRun);
