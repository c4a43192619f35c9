// The manifest's invariants (ref §3.2 step 3): pure, every violation collected, in the reference's order.

export interface ManifestPartition {
  partitionId: string;
  lowerBound: string | null;
  upperBound: string | null;
  upperInclusive: boolean;
  isNullPartition: boolean;
  expectedRowCount: bigint;
}

export interface ManifestPlan {
  sourceCount: bigint;
  sourceNullSplitCount: bigint;
  sourceMinSplit: string | null;
  sourceMaxSplit: string | null;
  plannedPartitionCount: number;
  partitions: ManifestPartition[];
}

export function manifestViolations(plan: ManifestPlan, allowEmptySource: boolean): string[] {
  const violations: string[] = [];
  const { partitions } = plan;

  const ids = partitions.map((p) => p.partitionId);
  if (new Set(ids).size !== ids.length) violations.push('DUPLICATE_PARTITION_ID');
  if (partitions.length !== plan.plannedPartitionCount) {
    violations.push(`PARTITION_COUNT_MISMATCH planned=${plan.plannedPartitionCount} actual=${partitions.length}`);
  }
  const sum = partitions.reduce((acc, p) => acc + p.expectedRowCount, 0n);
  if (sum !== plan.sourceCount) violations.push(`EXPECTED_SUM_MISMATCH sum=${sum} source=${plan.sourceCount}`);
  if (plan.sourceCount === 0n && !allowEmptySource) violations.push('EMPTY_SOURCE_BLOCKED');

  const nullPartitions = partitions.filter((p) => p.isNullPartition);
  if (nullPartitions.length > 1) violations.push('MULTIPLE_NULL_PARTITIONS');
  for (const p of nullPartitions) {
    if (p.partitionId !== 'NULL' || p.lowerBound !== null || p.upperBound !== null) {
      violations.push(`INVALID_NULL_PARTITION ${p.partitionId}`);
    }
  }
  if (nullPartitions.length > 0) {
    const nullExpected = nullPartitions.reduce((acc, p) => acc + p.expectedRowCount, 0n);
    if (nullExpected !== plan.sourceNullSplitCount) {
      violations.push(`NULL_COUNT_MISMATCH expected=${nullExpected} source=${plan.sourceNullSplitCount}`);
    }
  } else if (plan.sourceNullSplitCount > 0n) {
    violations.push('NULL_ROWS_WITHOUT_NULL_PARTITION');
  }

  const ranges: Array<ManifestPartition & { lower: bigint; upper: bigint }> = [];
  for (const p of partitions.filter((q) => !q.isNullPartition)) {
    if (p.partitionId === 'NULL' || p.lowerBound === null || p.upperBound === null || BigInt(p.lowerBound) > BigInt(p.upperBound)) {
      violations.push(`INVALID_BOUNDS ${p.partitionId}`);
    } else {
      ranges.push({ ...p, lower: BigInt(p.lowerBound), upper: BigInt(p.upperBound) });
    }
  }
  ranges.sort((a, b) =>
    a.lower < b.lower ? -1 : a.lower > b.lower ? 1 : a.partitionId < b.partitionId ? -1 : a.partitionId > b.partitionId ? 1 : 0,
  );
  ranges.forEach((p, i) => {
    const isLast = i === ranges.length - 1;
    if (p.upperInclusive !== isLast) violations.push(`UPPER_INCLUSIVE_INVALID ${p.partitionId}`);
    const next = ranges[i + 1];
    if (next && next.lower !== p.upper) violations.push(`RANGE_GAP_OR_OVERLAP ${p.partitionId}->${next.partitionId}`);
  });
  if (ranges.length > 0) {
    if (plan.sourceMinSplit !== null && BigInt(plan.sourceMinSplit) !== ranges[0]!.lower) violations.push('MIN_SPLIT_MISMATCH');
    if (plan.sourceMaxSplit !== null && BigInt(plan.sourceMaxSplit) !== ranges[ranges.length - 1]!.upper) {
      violations.push('MAX_SPLIT_MISMATCH');
    }
  }
  return violations;
}
