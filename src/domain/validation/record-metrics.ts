import type { Tx } from '../../db/client.js';
import { DomainError } from '../../contract/errors.js';
import { recordApiEvent } from '../events/events.js';
import { lockRun } from '../runs/lock-run.js';
import type { RunStatus } from '../states.js';
import type { JudgedStage } from './judge-metrics.js';
import { inOneTransaction } from '../../db/operation.js';

export const METRIC_RESULTS = ['PASS', 'FAIL', 'WARN'] as const;
type MetricResult = (typeof METRIC_RESULTS)[number];

/** The only run status in which each stage's metrics may be posted (ref §6). */
const METRIC_STAGE_RUN_STATUS: Record<JudgedStage, RunStatus> = {
  STAGING: 'STAGE_VALIDATING',
  TARGET: 'PUBLISHED',
};

interface MetricInput {
  metricName: string;
  expectedValue: string | null;
  actualValue: string | null;
  tolerance: string | null;
  result: MetricResult;
  details: Record<string, unknown>;
}

export interface RecordMetricsCommand {
  runId: string;
  stage: JudgedStage;
  queryVersion: string;
  metrics: MetricInput[];
  actor: string;
}

export interface RecordMetricsResult {
  recorded: number;
  failCount: number;
  runStatus: RunStatus;
}

/** recordMetrics (ref §3.10): upserts NiFi's STAGING/TARGET metrics; the judging happens later, server-side. */
async function recordMetrics(tx: Tx, cmd: RecordMetricsCommand): Promise<RecordMetricsResult> {
  const run = await lockRun(tx, cmd.runId);
  if (run.status !== METRIC_STAGE_RUN_STATUS[cmd.stage]) {
    throw new DomainError('RUN_STATUS_MISMATCH', { runStatus: run.status, stage: cmd.stage });
  }
  const ms = cmd.metrics;
  await tx.$executeRaw`
    INSERT INTO nifi_ops.load_validation (run_id, stage, metric_name, expected_value, actual_value, tolerance, result,
        query_version, details)
    SELECT ${cmd.runId}::uuid, ${cmd.stage}, m.name, m.expected, m.actual, m.tolerance, m.result, ${cmd.queryVersion},
           m.details::jsonb
      FROM unnest(${ms.map((m) => m.metricName)}::text[], ${ms.map((m) => m.expectedValue)}::text[],
                  ${ms.map((m) => m.actualValue)}::text[], ${ms.map((m) => m.tolerance)}::text[],
                  ${ms.map((m) => m.result)}::text[], ${ms.map((m) => JSON.stringify(m.details))}::text[])
           AS m(name, expected, actual, tolerance, result, details)
    ON CONFLICT (run_id, stage, metric_name, query_version) DO UPDATE
       SET expected_value = EXCLUDED.expected_value, actual_value = EXCLUDED.actual_value,
           tolerance = EXCLUDED.tolerance, result = EXCLUDED.result, details = EXCLUDED.details,
           measured_at = clock_timestamp()`;
  await tx.$executeRaw`UPDATE nifi_ops.load_run SET heartbeat_at = clock_timestamp() WHERE run_id = ${cmd.runId}::uuid`;

  const failed = ms.filter((m) => m.result === 'FAIL').map((m) => m.metricName);
  if (failed.length > 0) {
    await recordApiEvent(tx, {
      level: 'WARN',
      name: `${cmd.stage}_METRIC_FAILED`,
      runId: cmd.runId,
      actor: cmd.actor,
      message: failed.join(', '),
      details: { queryVersion: cmd.queryVersion, failed },
    });
  }
  return { recorded: ms.length, failCount: failed.length, runStatus: run.status };
}

export const recordMetricsOperation = inOneTransaction(recordMetrics);
