import type pg from 'pg';
import { actingAsValues, type ActingAs } from '../../auth/principal.js';
import type { AfterCommit } from '../../db/after-commit.js';
import { DomainError } from '../../contract/errors.js';
import { parsePartitionStatus, parseRunStatus, type PartitionStatus, type RunStatus } from '../states.js';
import { asStatements } from '../../db/operation.js';

export interface ClaimPartitionCommand {
  runId: string;
  partitionId: string;
  claimToken: string;
  workerNode: string;
  actor: string;
  /** Who the claim's caller is, for the audit trail (null: not known, e.g. a test calling the domain). */
  actingAs?: ActingAs | null;
}

export interface ClaimPartitionResult {
  claimed: boolean;
  runStatus: RunStatus;
  partitionStatus: PartitionStatus;
  attempt: number;
}

/**
 * claimPartition (ref §3.6): PENDING/RETRY → RUNNING for one claim token; the same token again is a replay.
 * The decision is nifi_ops.claim_partition (prisma/functions/02_claim_partition.sql): one statement, one round trip.
 */
async function claimPartition(sql: pg.Pool, cmd: ClaimPartitionCommand, afterCommit: AfterCommit): Promise<ClaimPartitionResult> {
  const { rows } = await sql.query<{
    outcome: string;
    claimed: boolean;
    run_status: string;
    partition_status: string;
    attempt: number;
  }>({
    // named: prepared once per connection instead of parsed and planned on every claim
    name: 'lc_claim_partition',
    text: 'SELECT * FROM nifi_ops.claim_partition($1, $2, $3, $4, nifi_ops.acting_as($5, $6, $7, $8))',
    values: [cmd.runId, cmd.partitionId, cmd.claimToken, cmd.workerNode, cmd.actor, ...actingAsValues(cmd.actingAs)],
  });
  const row = rows[0]!;
  if (row.outcome === 'RUN_NOT_FOUND') throw new DomainError('RUN_NOT_FOUND', { runId: cmd.runId });
  if (row.outcome === 'PARTITION_NOT_FOUND') throw new DomainError('PARTITION_NOT_FOUND', { partitionId: cmd.partitionId });
  if (row.claimed) afterCommit.runProgressed(cmd.runId);
  return {
    claimed: row.claimed,
    runStatus: parseRunStatus(row.run_status),
    partitionStatus: parsePartitionStatus(row.partition_status),
    attempt: row.attempt,
  };
}

export const claimPartitionOperation = asStatements(claimPartition);
