import type { Tx } from '../../db/client.js';
import { DomainError } from '../../contract/errors.js';
import { Prisma } from '../../generated/prisma/client.js';
import { recordApiEvent } from '../events/events.js';
import { lockRun } from '../runs/lock-run.js';
import { ACKABLE_DISPATCH_STATUSES, type RunStatus } from '../states.js';
import { transitionDispatch, transitionRun } from '../transitions.js';
import { inOneTransaction } from '../../db/operation.js';

export interface StartValidationCommand {
  runId: string;
  dispatchId: string;
  node: string;
  actor: string;
}

/** The run's context for the validation flow; every field is null (and sourceMetrics empty) unless started. */
export interface StartValidationResult {
  started: boolean;
  runStatus: RunStatus;
  jobKey: string | null;
  businessKey: string | null;
  snapshotScn: string | null;
  hdfsRunPath: string | null;
  stageTable: string | null;
  sourceCount: bigint | null;
  extractedCount: bigint | null;
  sourceMetrics: Record<string, string | null>;
}

/**
 * startValidation (ref §3.9): the validation flow's first call is the ACK of its VALIDATE_RUN dispatch and
 * the dedup gate — only the EXTRACTED_VALIDATED → STAGE_VALIDATING winner gets the run's context.
 */
async function startValidation(tx: Tx, cmd: StartValidationCommand): Promise<StartValidationResult> {
  const run = await lockRun(tx, cmd.runId);
  const dispatches = await tx.$queryRaw<Array<{ status: string }>>`
    SELECT status FROM nifi_ops.load_dispatch
     WHERE dispatch_id = ${cmd.dispatchId}::uuid AND run_id = ${cmd.runId}::uuid AND dispatch_type = 'VALIDATE_RUN'
       FOR UPDATE`;
  if (dispatches.length === 0) throw new DomainError('DISPATCH_MISMATCH', { dispatchId: cmd.dispatchId });

  // The call arrived, so the dispatch is acknowledged even when another start wins: duplicates stop re-sends.
  await transitionDispatch(tx, { dispatchId: cmd.dispatchId }, { from: ACKABLE_DISPATCH_STATUSES, to: 'ACKED' });

  const [won] = await transitionRun<{
    snapshot_scn: string | null;
    hdfs_run_path: string | null;
    stage_table_name: string | null;
    source_count: bigint | null;
    extracted_count: bigint;
  }>(
    tx,
    { runId: cmd.runId },
    {
      from: ['EXTRACTED_VALIDATED'],
      to: 'STAGE_VALIDATING',
      returning: Prisma.sql`t.snapshot_scn::text, t.hdfs_run_path, t.stage_table_name, t.source_count, t.extracted_count`,
    },
  );
  if (!won) {
    return {
      started: false,
      runStatus: run.status,
      jobKey: null,
      businessKey: null,
      snapshotScn: null,
      hdfsRunPath: null,
      stageTable: null,
      sourceCount: null,
      extractedCount: null,
      sourceMetrics: {},
    };
  }

  // one value per name: with several query versions the last in (metric_name, query_version) order wins
  const metrics = await tx.$queryRaw<Array<{ metric_name: string; actual_value: string | null }>>`
    SELECT metric_name, actual_value FROM nifi_ops.load_validation
     WHERE run_id = ${cmd.runId}::uuid AND stage = 'SOURCE' ORDER BY metric_name, query_version`;
  await recordApiEvent(tx, {
    level: 'INFO',
    name: 'STAGE_VALIDATION_STARTED',
    runId: cmd.runId,
    actor: cmd.actor,
    details: { dispatchId: cmd.dispatchId, node: cmd.node },
  });
  return {
    started: true,
    runStatus: 'STAGE_VALIDATING',
    jobKey: run.jobKey,
    businessKey: run.businessKey,
    snapshotScn: won.snapshot_scn,
    hdfsRunPath: won.hdfs_run_path,
    stageTable: won.stage_table_name,
    sourceCount: won.source_count,
    extractedCount: won.extracted_count,
    sourceMetrics: Object.fromEntries(metrics.map((m) => [m.metric_name, m.actual_value])),
  };
}

export const startValidationOperation = inOneTransaction(startValidation);
