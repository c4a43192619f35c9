import { OPERATOR_EVENTS } from '../events/operator-events.js';
import type { AfterCommit } from '../../db/after-commit.js';
import type { Tx } from '../../db/client.js';
import { DomainError } from '../../contract/errors.js';
import { recordApiEvent } from '../events/events.js';
import { Prisma } from '../../generated/prisma/client.js';
import {
  DISPATCH_WAITING_RUN_STATUS,
  REISSUABLE_PARTITION_STATUSES,
  REISSUE_WAITING_PARTITION_STATUS,
  parsePartitionStatus,
  type PartitionStatus,
} from '../states.js';
import { transitionFiles, transitionPartition } from '../transitions.js';
import { inOneTransaction } from '../../db/operation.js';

export interface ReissuePartitionCommand {
  runId: string;
  partitionId: string;
  /** Stored as the partition's error code: why it was taken from its owner. */
  errorCode: string;
  /** The partition's error message and the event's message. */
  reason: string;
  actor: string;
  /** Set when a bulk action (src/domain/operator/bulk-action.ts) reissues it: its id, in the event. */
  bulkActionId?: string | null;
}

export interface ReissuePartitionResult {
  partitionStatus: PartitionStatus;
  dispatchId: string;
  invalidatedFiles: number;
}

/**
 * Takes a partition away from its owner and asks NiFi to extract it again with the same SCN (ref §5.2
 * REISSUE): the partition → RETRY without owner, its WRITTEN chunks → FAILED (so its counters, which
 * mirror the WRITTEN chunks, restart from zero), and a REISSUE_PARTITION call in the outbox. A late
 * report from the old owner then gets CLAIM_MISMATCH. Used by the sweeper and by reissuePartition.
 */
export async function reissuePartition(tx: Tx, cmd: ReissuePartitionCommand, afterCommit: AfterCommit): Promise<ReissuePartitionResult> {
  // lock order: the partition row, then the run row, then files and dispatches
  const [partition] = await tx.$queryRaw<Array<{ status: string; attempt_count: number }>>`
    SELECT status, attempt_count FROM nifi_ops.load_partition
     WHERE run_id = ${cmd.runId}::uuid AND partition_id = ${cmd.partitionId} FOR UPDATE`;
  const [run] = await tx.$queryRaw<Array<{ status: string }>>`
    SELECT status FROM nifi_ops.load_run WHERE run_id = ${cmd.runId}::uuid FOR UPDATE`;
  if (!run) throw new DomainError('RUN_NOT_FOUND', { runId: cmd.runId });
  if (!partition) throw new DomainError('PARTITION_NOT_FOUND', { partitionId: cmd.partitionId });
  if (run.status !== DISPATCH_WAITING_RUN_STATUS.REISSUE_PARTITION) {
    throw new DomainError('RUN_STATUS_MISMATCH', { runStatus: run.status });
  }
  const partitionStatus = parsePartitionStatus(partition.status);
  if (!REISSUABLE_PARTITION_STATUSES.includes(partitionStatus)) {
    throw new DomainError('PARTITION_STATUS_MISMATCH', { partitionStatus });
  }

  await transitionPartition(
    tx,
    { runId: cmd.runId, partitionId: cmd.partitionId },
    {
      from: [partitionStatus],
      to: REISSUE_WAITING_PARTITION_STATUS,
      set: Prisma.sql`claim_token = NULL, worker_node = NULL, claimed_by = NULL,
           error_code = ${cmd.errorCode}, error_message = left(${cmd.reason}, 2000),
           received_chunks = 0, received_rows = 0, received_bytes = 0, reported_chunk_count = NULL,
           chunk_count_mismatches = 0`,
    },
  );
  const invalidated = await transitionFiles(
    tx,
    { runId: cmd.runId, partitionId: cmd.partitionId },
    {
      from: ['WRITTEN'],
      to: 'FAILED',
      returning: Prisma.sql`1 AS moved`,
    },
  );
  const invalidatedFiles = invalidated.length;
  const [dispatch] = await tx.$queryRaw<Array<{ dispatch_id: string }>>`
    INSERT INTO nifi_ops.load_dispatch (dispatch_id, run_id, dispatch_type, partition_id)
    VALUES (gen_random_uuid(), ${cmd.runId}::uuid, 'REISSUE_PARTITION', ${cmd.partitionId})
    RETURNING dispatch_id::text`;
  await recordApiEvent(tx, {
    level: 'WARN',
    name: OPERATOR_EVENTS.reissuePartition,
    runId: cmd.runId,
    partitionId: cmd.partitionId,
    actor: cmd.actor,
    errorCode: cmd.errorCode,
    message: cmd.reason,
    details: {
      from: partition.status,
      attempt: partition.attempt_count,
      invalidatedFiles,
      dispatchId: dispatch!.dispatch_id,
      ...(cmd.bulkActionId ? { bulkActionId: cmd.bulkActionId } : {}),
    },
  });
  afterCommit.wakeDispatcher(cmd.runId);
  return { partitionStatus: REISSUE_WAITING_PARTITION_STATUS, dispatchId: dispatch!.dispatch_id, invalidatedFiles };
}

export const reissuePartitionOperation = inOneTransaction(reissuePartition);
