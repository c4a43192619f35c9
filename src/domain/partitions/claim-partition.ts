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

/** Why a claim that could otherwise have been admitted was not: its job's source pool had no free slot. */
export const CLAIM_REFUSAL_REASONS = ['POOL_FULL'] as const;
type ClaimRefusalReason = (typeof CLAIM_REFUSAL_REASONS)[number];

export interface ClaimPartitionResult {
  claimed: boolean;
  runStatus: RunStatus;
  partitionStatus: PartitionStatus;
  attempt: number;
  /** Set when the claim waits for a slot: try again after retryAfter seconds (not a failure). */
  reason: ClaimRefusalReason | null;
  retryAfter: number | null;
  /** The source pool the job is in, when it is in one and the claim was admitted or refused by it. */
  pool: string | null;
}

/**
 * claimPartition (ref §3.6): PENDING/RETRY → RUNNING for one claim token; the same token again is a replay.
 * The decision, with the source pool's admission, is nifi_ops.claim_partition_within_pool
 * (prisma/functions/02_claim_partition.sql): one statement, one round trip.
 */
async function claimPartition(sql: pg.Pool, cmd: ClaimPartitionCommand, afterCommit: AfterCommit): Promise<ClaimPartitionResult> {
  const { rows } = await sql.query<{
    outcome: string;
    claimed: boolean;
    run_status: string;
    partition_status: string;
    attempt: number;
    pool_name: string | null;
    retry_after_seconds: number | null;
  }>({
    // named: prepared once per connection instead of parsed and planned on every claim
    name: 'lc_claim_partition_within_pool',
    text: 'SELECT * FROM nifi_ops.claim_partition_within_pool($1, $2, $3, $4, nifi_ops.acting_as($5, $6, $7, $8))',
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
    reason: row.outcome === 'POOL_FULL' ? 'POOL_FULL' : null,
    retryAfter: row.retry_after_seconds,
    pool: row.pool_name,
  };
}

export const claimPartitionOperation = asStatements(claimPartition);
