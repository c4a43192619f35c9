import type { Tx } from '../../db/client.js';

/** The stages NiFi posts and the API judges; SOURCE is written by the manifest itself. */
export const JUDGED_STAGES = ['STAGING', 'TARGET'] as const;
export type JudgedStage = (typeof JUDGED_STAGES)[number];

export interface StoredMetric {
  metricName: string;
  queryVersion: string;
  actualValue: string | null;
  result: string;
}

/** Every stored metric of one stage, all query versions, by (metric_name, query_version). */
export function stageMetrics(tx: Tx, runId: string, stage: JudgedStage): Promise<StoredMetric[]> {
  return tx.$queryRaw<StoredMetric[]>`
    SELECT metric_name AS "metricName", query_version AS "queryVersion", actual_value AS "actualValue", result
      FROM nifi_ops.load_validation
     WHERE run_id = ${runId}::uuid AND stage = ${stage}
     ORDER BY metric_name, query_version`;
}

const BIGINT_MAX = 2n ** 63n - 1n;

/** A count metric's value as a non-negative 64-bit integer, or null when it is anything else. */
function parseCount(value: string | null): bigint | null {
  const text = value?.trim() ?? '';
  if (!/^[0-9]{1,19}$/.test(text)) return null;
  const n = BigInt(text);
  return n <= BIGINT_MAX ? n : null;
}

export const countMismatch = (name: string, value: bigint | string, expected: bigint): string =>
  `COUNT_MISMATCH ${name}=${value} expected=${expected}`;

export interface StageVerdict {
  reasons: string[];
  /** The stage's count metric (the first row by query version), when present and an integer. */
  count: bigint | null;
}

/**
 * Re-judges a stage from its stored rows (ref §6): at least one row and no FAIL (WARN passes); and,
 * beyond the reference (deviations 7 and 8), every row of the count metric must hold an integer equal
 * to the count the previous stage established.
 */
export function judgeStage(metrics: StoredMetric[], countMetric: { name: string; expected: bigint }): StageVerdict {
  if (metrics.length === 0) return { reasons: ['NO_METRICS'], count: null };
  const failed = [...new Set(metrics.filter((m) => m.result === 'FAIL').map((m) => m.metricName))];
  const reasons = failed.map((name) => `FAIL ${name}`);
  let count: bigint | null = null;
  for (const m of metrics.filter((row) => row.metricName === countMetric.name)) {
    const value = parseCount(m.actualValue);
    if (value === null) {
      reasons.push(`COUNT_NOT_INTEGER ${m.metricName}=${m.actualValue ?? 'null'}`);
    } else if (value !== countMetric.expected) {
      reasons.push(countMismatch(m.metricName, value, countMetric.expected));
    } else {
      count ??= value;
    }
  }
  return { reasons, count };
}
