import type pg from 'pg';
import { actingAsValues, type ActingAs } from '../../auth/principal.js';
import type { AfterCommit } from '../../db/after-commit.js';
import { asStatements } from '../../db/operation.js';
import { isUniqueViolation } from '../../db/errors.js';
import { DomainError } from '../../contract/errors.js';
import { climbsOut } from '../fields.js';
import { parsePartitionStatus, parseRunStatus, type PartitionStatus, type RunStatus } from '../states.js';

export interface ReportChunkCommand {
  runId: string;
  partitionId: string;
  claimToken: string;
  chunkIndex: number;
  chunkCount: number;
  fragmentIdentifier: string | null;
  hdfsPath: string;
  recordCount: bigint;
  byteCount: bigint | null;
  actor: string;
  /** Who the report's caller is, for the audit trail (null: not known, e.g. a test calling the domain). */
  actingAs?: ActingAs | null;
}

export interface ReportChunkResult {
  recorded: true;
  partitionStatus: PartitionStatus;
  runStatus: RunStatus;
  receivedChunks: number;
  chunkCount: number;
  validationScheduled: boolean;
  /** What the report did, for metrics: PROGRESS, IGNORED, PARTITION_SUCCESS, PARTITION_FAILED, RUN_COMPLETE. */
  effect: string;
}

/** What nifi_ops.report_chunk answers for one report (report_chunks: one row per report, with its ordinal). */
interface ChunkReportRow {
  outcome: string;
  partition_status: string;
  run_status: string;
  received_chunks: number;
  validation_scheduled: boolean;
}

/** The refusals decided from the report alone, before any SQL (ref §3.7). */
export function checkChunkReport(cmd: ReportChunkCommand): void {
  if (cmd.chunkIndex >= cmd.chunkCount) {
    throw new DomainError('CHUNK_INDEX_OUT_OF_RANGE', { chunkIndex: cmd.chunkIndex, chunkCount: cmd.chunkCount });
  }
  if (climbsOut(cmd.hdfsPath)) throw new DomainError('HDFS_PATH_OUTSIDE_RUN', { hdfsPath: cmd.hdfsPath });
}

/**
 * reportChunk (ref §3.7). The whole decision — claim check, chunk upsert, the partition's counters, its
 * outcome and, for the last partition, the run's completion with its VALIDATE_RUN outbox row — is
 * nifi_ops.report_chunk (prisma/functions/03_report_chunk.sql), read top to bottom there. One statement per
 * report; reports that arrive together are sent as one batch (reportChunks) by the chunk reporter
 * (chunk-reporter.ts, beside this file).
 */
export async function reportChunk(sql: pg.Pool, cmd: ReportChunkCommand, afterCommit: AfterCommit): Promise<ReportChunkResult> {
  checkChunkReport(cmd);
  let row: ChunkReportRow | undefined;
  try {
    ({
      rows: [row],
    } = await sql.query<ChunkReportRow>({
      // named: prepared once per connection instead of parsed and planned on every report
      name: 'lc_report_chunk',
      text: 'SELECT * FROM nifi_ops.report_chunk($1, $2, $3, $4, $5, $6, $7, $8, $9, nifi_ops.acting_as($10, $11, $12, $13))',
      values: [
        cmd.runId,
        cmd.partitionId,
        cmd.claimToken,
        cmd.chunkIndex,
        cmd.chunkCount,
        cmd.fragmentIdentifier,
        cmd.hdfsPath,
        cmd.recordCount.toString(),
        cmd.byteCount?.toString() ?? null,
        cmd.actor,
        ...actingAsValues(cmd.actingAs),
      ],
    }));
  } catch (error) {
    if (isUniqueViolation(error, 'uq_load_file_path')) throw new DomainError('FILE_PATH_CONFLICT', { hdfsPath: cmd.hdfsPath });
    throw error;
  }
  switch (row!.outcome) {
    case 'RUN_NOT_FOUND':
      throw new DomainError('RUN_NOT_FOUND', { runId: cmd.runId });
    case 'PARTITION_NOT_FOUND':
      throw new DomainError('PARTITION_NOT_FOUND', { partitionId: cmd.partitionId });
    case 'CHUNK_CONFLICT':
      await recordChunkConflict(sql, cmd);
      throw new DomainError(row!.outcome, { partitionStatus: row!.partition_status, runStatus: row!.run_status });
    case 'CLAIM_MISMATCH':
    case 'HDFS_PATH_OUTSIDE_RUN':
      throw new DomainError(row!.outcome, { partitionStatus: row!.partition_status, runStatus: row!.run_status });
  }
  return recorded(cmd, row!, afterCommit);
}

/**
 * Reports as one call of nifi_ops.report_chunks: one statement, one commit (prisma/functions/03_report_chunk.sql).
 * Each report is decided by report_chunk's fast path, under the same row locks; answer n is report n's result,
 * or null when that path did not take it (DEFERRED): such a report is to be sent alone, by reportChunk, after
 * this batch committed. When the batch fails as a whole (a chunk's path taken by another chunk, say), it
 * recorded none of its reports.
 */
async function reportChunks(sql: pg.Pool, cmds: ReportChunkCommand[], afterCommit: AfterCommit): Promise<Array<ReportChunkResult | null>> {
  const column = <T>(pick: (cmd: ReportChunkCommand) => T) => cmds.map(pick);
  const { rows } = await sql.query<ChunkReportRow & { ordinal: number }>({
    name: 'lc_report_chunks',
    // a batch holds the reports of one caller (the reporter groups them so), who its events record
    text: 'SELECT * FROM nifi_ops.report_chunks($1, $2, $3, $4, $5, $6, $7, $8, $9, nifi_ops.acting_as_all($10, $11, $12, $13))',
    values: [
      column((c) => c.runId),
      column((c) => c.partitionId),
      column((c) => c.claimToken),
      column((c) => c.chunkIndex),
      column((c) => c.chunkCount),
      column((c) => c.fragmentIdentifier),
      column((c) => c.hdfsPath),
      column((c) => c.recordCount.toString()),
      column((c) => c.byteCount?.toString() ?? null),
      column((c) => c.actor),
      ...actingAsValues(cmds[0]!.actingAs),
    ],
  });
  // row n answers report n (ordinal n + 1)
  const answers = new Map(rows.map((row) => [row.ordinal, row]));
  return cmds.map((cmd, i) => {
    const row = answers.get(i + 1);
    return !row || row.outcome === 'DEFERRED' ? null : recorded(cmd, row, afterCommit);
  });
}

/** A recorded report: its run moved (a progress notice), and the last chunk of the run wakes the dispatchers for its VALIDATE_RUN. */
function recorded(cmd: ReportChunkCommand, row: ChunkReportRow, afterCommit: AfterCommit): ReportChunkResult {
  afterCommit.runProgressed(cmd.runId);
  if (row.validation_scheduled) afterCommit.wakeDispatcher(cmd.runId);
  return {
    recorded: true,
    partitionStatus: parsePartitionStatus(row.partition_status),
    runStatus: parseRunStatus(row.run_status),
    receivedChunks: row.received_chunks,
    chunkCount: cmd.chunkCount,
    validationScheduled: row.validation_scheduled,
    effect: row.outcome,
  };
}

/**
 * A changed chunk of an already-successful partition must be investigated, so it is an alert. The refusing
 * statement wrote nothing (it is all or nothing), so the event is written by a statement of its own.
 */
async function recordChunkConflict(sql: pg.Pool, cmd: ReportChunkCommand): Promise<void> {
  await sql.query(
    `SELECT nifi_ops.record_api_event('WARN', 'CHUNK_CONFLICT', $1::uuid, $2, nifi_ops.acting_as($3, $6, $7, $8),
        p_error_code => 'CHUNK_CONFLICT', p_message => $4, p_details => $5::jsonb)`,
    [
      cmd.runId,
      cmd.partitionId,
      cmd.actor,
      `chunk ${cmd.chunkIndex} of partition ${cmd.partitionId} changed after the partition succeeded`,
      JSON.stringify({
        chunkIndex: cmd.chunkIndex,
        chunkCount: cmd.chunkCount,
        hdfsPath: cmd.hdfsPath,
        recordCount: cmd.recordCount.toString(),
        byteCount: cmd.byteCount?.toString() ?? null,
      }),
      ...actingAsValues(cmd.actingAs),
    ],
  );
}

export const reportChunkOperation = asStatements(reportChunk);
export const reportChunksOperation = asStatements(reportChunks);
