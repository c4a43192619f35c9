import type { Tx } from '../../db/client.js';
import { DomainError } from '../../contract/errors.js';
import { Prisma } from '../../generated/prisma/client.js';
import { parsePartitionStatus, parseRunStatus, SNAPSHOT_ERROR_CODES, type PartitionStatus, type RunStatus } from '../states.js';
import { transitionPartition, transitionRun } from '../transitions.js';
import { inOneTransaction } from '../../db/operation.js';

export interface FailPartitionCommand {
  runId: string;
  partitionId: string;
  claimToken: string;
  errorStage: string;
  errorClass: string;
  errorCode: string;
  message: string;
  attempt: number | null;
  actor: string;
}

export interface FailPartitionResult {
  partitionStatus: PartitionStatus;
  runStatus: RunStatus;
  changed: boolean;
}

function isSnapshotError(cmd: FailPartitionCommand): boolean {
  return SNAPSHOT_ERROR_CODES.includes(cmd.errorCode.toUpperCase()) || cmd.errorClass.toUpperCase() === 'SNAPSHOT';
}

/** failPartition (ref §3.8): the owner reports a final failure; while extracting, the run fails with it. */
async function failPartition(tx: Tx, cmd: FailPartitionCommand): Promise<FailPartitionResult> {
  // lock order: the partition row first, then the run row
  const [partition] = await tx.$queryRaw<Array<{ status: string; claim_token: string | null }>>`
    SELECT status, claim_token::text FROM nifi_ops.load_partition
     WHERE run_id = ${cmd.runId}::uuid AND partition_id = ${cmd.partitionId} FOR UPDATE`;
  const [run] = await tx.$queryRaw<Array<{ status: string }>>`
    SELECT status FROM nifi_ops.load_run WHERE run_id = ${cmd.runId}::uuid FOR UPDATE`;
  if (!run) throw new DomainError('RUN_NOT_FOUND', { runId: cmd.runId });
  if (!partition) throw new DomainError('PARTITION_NOT_FOUND', { partitionId: cmd.partitionId });
  if (partition.claim_token !== cmd.claimToken) throw new DomainError('CLAIM_MISMATCH');
  const partitionStatus = parsePartitionStatus(partition.status);
  let runStatus = parseRunStatus(run.status);
  if (partitionStatus === 'FAILED') return { partitionStatus, runStatus, changed: false };
  if (partitionStatus !== 'RUNNING') throw new DomainError('PARTITION_STATUS_MISMATCH', { partitionStatus });

  await transitionPartition(
    tx,
    { runId: cmd.runId, partitionId: cmd.partitionId },
    {
      from: ['RUNNING'],
      to: 'FAILED',
      set: Prisma.sql`error_code = ${cmd.errorCode}, error_message = NULLIF(${cmd.message}, '')`,
      event: {
        level: 'ERROR',
        name: 'PARTITION_FAILED',
        runId: cmd.runId,
        partitionId: cmd.partitionId,
        actor: cmd.actor,
        errorClass: cmd.errorClass,
        errorCode: cmd.errorCode,
        message: cmd.message,
        details: { stage: cmd.errorStage, attempt: cmd.attempt },
      },
    },
  );

  if (runStatus === 'EXTRACTING') {
    runStatus = isSnapshotError(cmd) ? 'FAILED_SNAPSHOT_EXPIRED' : 'FAILED_EXTRACT';
    const runMessage = `partition ${cmd.partitionId}: ${cmd.message}`.slice(0, 2000);
    await transitionRun(
      tx,
      { runId: cmd.runId },
      {
        from: ['EXTRACTING'],
        to: runStatus,
        set: Prisma.sql`failed_partition_count = t.failed_partition_count + 1, error_stage = ${cmd.errorStage},
             error_code = ${cmd.errorCode}, error_message = ${runMessage}`,
        event: {
          level: 'ERROR',
          name: 'RUN_FAILED',
          runId: cmd.runId,
          partitionId: cmd.partitionId,
          actor: cmd.actor,
          errorCode: cmd.errorCode,
          message: runMessage,
          details: { stage: cmd.errorStage, from: 'EXTRACTING', to: runStatus },
        },
      },
    );
  } else {
    await tx.$executeRaw`
      UPDATE nifi_ops.load_run SET failed_partition_count = failed_partition_count + 1 WHERE run_id = ${cmd.runId}::uuid`;
  }
  return { partitionStatus: 'FAILED', runStatus, changed: true };
}

export const failPartitionOperation = inOneTransaction(failPartition);
