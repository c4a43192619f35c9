import type { AfterCommit } from '../../db/after-commit.js';
import type { Tx } from '../../db/client.js';
import { DomainError } from '../../contract/errors.js';
import { recordApiEvent } from '../events/events.js';
import { Prisma } from '../../generated/prisma/client.js';
import { lockRun } from '../runs/lock-run.js';
import type { RunStatus } from '../states.js';
import { transitionRun } from '../transitions.js';
import { manifestViolations, type ManifestPartition, type ManifestPlan } from './invariants.js';
import { inOneTransaction } from '../../db/operation.js';

export interface RegisterManifestCommand extends ManifestPlan {
  runId: string;
  snapshotScn: string | null;
  sourceMetrics: Record<string, string>;
  sourceMetricsVersion: string;
  actor: string;
}

export interface RegisterManifestResult {
  runId: string;
  status: RunStatus;
  dispatchPartitions: ManifestPartition[];
  emptyPartitionCount: number;
  validationScheduled: boolean;
}

interface StoredPartition {
  partition_id: string;
  lower_bound: string | null;
  upper_bound: string | null;
  upper_inclusive: boolean;
  is_null_partition: boolean;
  expected_row_count: bigint;
}

const sameDecimal = (a: string | null, b: string | null) => (a === null || b === null ? a === b : BigInt(a) === BigInt(b));

/** Deviation 9: a replay must match the whole stored plan, not only the partition ids. */
async function replayOfStoredPlan(tx: Tx, cmd: RegisterManifestCommand, runStatus: RunStatus): Promise<RegisterManifestResult> {
  const [run] = await tx.$queryRaw<
    Array<{
      snapshot_scn: string | null;
      source_count: bigint | null;
      source_null_split_count: bigint | null;
      source_min_split: string | null;
      source_max_split: string | null;
    }>
  >`
    SELECT snapshot_scn::text, source_count, source_null_split_count, source_min_split::text, source_max_split::text
      FROM nifi_ops.load_run WHERE run_id = ${cmd.runId}::uuid`;
  const stored = await tx.$queryRaw<StoredPartition[]>`
    SELECT partition_id, lower_bound::text, upper_bound::text, upper_inclusive, is_null_partition, expected_row_count
      FROM nifi_ops.load_partition WHERE run_id = ${cmd.runId}::uuid ORDER BY partition_id`;
  const metrics = await tx.$queryRaw<Array<{ metric_name: string; actual_value: string | null }>>`
    SELECT metric_name, actual_value FROM nifi_ops.load_validation
     WHERE run_id = ${cmd.runId}::uuid AND stage = 'SOURCE' AND query_version = ${cmd.sourceMetricsVersion}`;

  const requested = [...cmd.partitions].sort((a, b) => (a.partitionId < b.partitionId ? -1 : 1));
  const storedMetrics = new Map(metrics.map((m) => [m.metric_name, m.actual_value]));
  const requestedMetrics = new Map(Object.entries({ ...cmd.sourceMetrics, SOURCE_COUNT: String(cmd.sourceCount) }));
  const matches =
    run !== undefined &&
    stored.length > 0 &&
    stored.length === requested.length &&
    stored.every((s, i) => {
      const r = requested[i]!;
      return (
        s.partition_id === r.partitionId &&
        sameDecimal(s.lower_bound, r.lowerBound) &&
        sameDecimal(s.upper_bound, r.upperBound) &&
        s.upper_inclusive === r.upperInclusive &&
        s.is_null_partition === r.isNullPartition &&
        s.expected_row_count === r.expectedRowCount
      );
    }) &&
    sameDecimal(run.snapshot_scn, cmd.snapshotScn) &&
    run.source_count === cmd.sourceCount &&
    run.source_null_split_count === cmd.sourceNullSplitCount &&
    sameDecimal(run.source_min_split, cmd.sourceMinSplit) &&
    sameDecimal(run.source_max_split, cmd.sourceMaxSplit) &&
    storedMetrics.size === requestedMetrics.size &&
    [...requestedMetrics].every(([name, value]) => storedMetrics.get(name) === value);
  if (!matches) throw new DomainError('RUN_STATUS_MISMATCH', { runStatus });

  return {
    runId: cmd.runId,
    status: runStatus,
    dispatchPartitions: cmd.partitions.filter((p) => p.expectedRowCount > 0n),
    emptyPartitionCount: stored.filter((s) => s.expected_row_count === 0n).length,
    validationScheduled: false,
  };
}

/**
 * registerManifest (ref §3.2): the partition plan, checked atomically; the run starts extracting. An invalid
 * plan fails the run, and MANIFEST_INVALID is raised once FAILED_MANIFEST committed (ref §12.1.1).
 */
async function registerManifest(tx: Tx, cmd: RegisterManifestCommand, afterCommit: AfterCommit): Promise<RegisterManifestResult> {
  const run = await lockRun(tx, cmd.runId);
  if (run.status !== 'CREATED') return replayOfStoredPlan(tx, cmd, run.status);

  const violations = manifestViolations(cmd, run.parameters.allowEmptySource === true);
  if (violations.length > 0) {
    const message = violations.join('; ').slice(0, 2000);
    await transitionRun(
      tx,
      { runId: cmd.runId },
      {
        from: ['CREATED'],
        to: 'FAILED_MANIFEST',
        set: Prisma.sql`error_stage = 'MANIFEST', error_code = 'MANIFEST_INVALID', error_message = ${message}`,
        event: {
          level: 'ERROR',
          name: 'MANIFEST_INVALID',
          runId: cmd.runId,
          actor: cmd.actor,
          errorCode: 'MANIFEST_INVALID',
          message,
          details: { violations },
        },
      },
    );
    afterCommit.raise(new DomainError('MANIFEST_INVALID', { violations }, violations.join('; ')));
  }

  const ps = cmd.partitions;
  await tx.$executeRaw`
    INSERT INTO nifi_ops.load_partition (run_id, partition_id, lower_bound, upper_bound, upper_inclusive,
        is_null_partition, expected_row_count, status, actual_row_count, file_count, fragment_count, byte_count, completed_at)
    SELECT ${cmd.runId}::uuid, p.id, p.lower, p.upper, p.inclusive, p.is_null, p.expected,
           CASE WHEN p.expected = 0 THEN 'SUCCESS' ELSE 'PENDING' END,
           CASE WHEN p.expected = 0 THEN 0 END, CASE WHEN p.expected = 0 THEN 0 END,
           CASE WHEN p.expected = 0 THEN 0 END, CASE WHEN p.expected = 0 THEN 0 END,
           CASE WHEN p.expected = 0 THEN clock_timestamp() END
      FROM unnest(${ps.map((p) => p.partitionId)}::text[], ${ps.map((p) => p.lowerBound)}::numeric[],
                  ${ps.map((p) => p.upperBound)}::numeric[], ${ps.map((p) => p.upperInclusive)}::boolean[],
                  ${ps.map((p) => p.isNullPartition)}::boolean[], ${ps.map((p) => p.expectedRowCount.toString())}::bigint[])
           AS p(id, lower, upper, inclusive, is_null, expected)`;

  const emptyPartitionCount = ps.filter((p) => p.expectedRowCount === 0n).length;
  await transitionRun(
    tx,
    { runId: cmd.runId },
    {
      from: ['CREATED'],
      to: 'EXTRACTING',
      set: Prisma.sql`snapshot_scn = ${cmd.snapshotScn}::numeric, source_count = ${cmd.sourceCount},
           source_null_split_count = ${cmd.sourceNullSplitCount}, source_min_split = ${cmd.sourceMinSplit}::numeric,
           source_max_split = ${cmd.sourceMaxSplit}::numeric, expected_partition_count = ${ps.length},
           success_partition_count = ${emptyPartitionCount}, extracted_count = 0`,
    },
  );

  // one row per name (a single upsert may not touch a row twice): a SOURCE_COUNT entry of sourceMetrics
  // replaces the API's own, as the reference's one-by-one upserts did
  const metrics = [...new Map([['SOURCE_COUNT', cmd.sourceCount.toString()], ...Object.entries(cmd.sourceMetrics)])];
  await tx.$executeRaw`
    INSERT INTO nifi_ops.load_validation (run_id, stage, metric_name, actual_value, result, query_version)
    SELECT ${cmd.runId}::uuid, 'SOURCE', m.name, m.value, 'PASS', ${cmd.sourceMetricsVersion}
      FROM unnest(${metrics.map((m) => m[0])}::text[], ${metrics.map((m) => m[1])}::text[]) AS m(name, value)
    ON CONFLICT (run_id, stage, metric_name, query_version)
    DO UPDATE SET actual_value = EXCLUDED.actual_value, result = 'PASS', measured_at = clock_timestamp()`;
  await recordApiEvent(tx, {
    level: 'INFO',
    name: 'MANIFEST_CREATED',
    runId: cmd.runId,
    actor: cmd.actor,
    rowCount: cmd.sourceCount,
    details: { partitions: ps.length, empty: emptyPartitionCount, snapshotScn: cmd.snapshotScn },
  });

  const allEmpty = emptyPartitionCount === ps.length;
  if (allEmpty) {
    await transitionRun(tx, { runId: cmd.runId }, { from: ['EXTRACTING'], to: 'EXTRACTED_VALIDATED' });
    await tx.$executeRaw`
      INSERT INTO nifi_ops.load_dispatch (dispatch_id, run_id, dispatch_type)
      VALUES (gen_random_uuid(), ${cmd.runId}::uuid, 'VALIDATE_RUN')
      ON CONFLICT (run_id) WHERE dispatch_type = 'VALIDATE_RUN' DO NOTHING`;
    await recordApiEvent(tx, { level: 'INFO', name: 'EXTRACT_VALIDATED', runId: cmd.runId, actor: cmd.actor, rowCount: 0n });
    afterCommit.wakeDispatcher(cmd.runId);
  }
  return {
    runId: cmd.runId,
    status: allEmpty ? 'EXTRACTED_VALIDATED' : 'EXTRACTING',
    dispatchPartitions: ps.filter((p) => p.expectedRowCount > 0n),
    emptyPartitionCount,
    validationScheduled: allEmpty,
  };
}

export const registerManifestOperation = inOneTransaction(registerManifest);
