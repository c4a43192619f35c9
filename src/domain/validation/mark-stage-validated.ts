import type { Tx } from '../../db/client.js';
import { Prisma } from '../../generated/prisma/client.js';
import { lockRun } from '../runs/lock-run.js';
import type { RunStatus } from '../states.js';
import { transitionRun } from '../transitions.js';
import { judgeStage, stageMetrics } from './judge-metrics.js';
import { inOneTransaction } from '../../db/operation.js';

export interface MarkStageValidatedCommand {
  runId: string;
  actor: string;
}

export interface MarkStageValidatedResult {
  stageValidated: boolean;
  runStatus: RunStatus;
  reasons: string[];
  stagingCount: bigint | null;
}

/**
 * markStageValidated (ref §3.11, deviations 7 and 8): STAGE_VALIDATING → STAGING_VALIDATED when the stored
 * STAGING metrics pass and STAGE_COUNT, when present, equals the extracted count. A failing judgement is
 * a 200 with reasons and no state change: NiFi decides to call failRun.
 */
async function markStageValidated(tx: Tx, cmd: MarkStageValidatedCommand): Promise<MarkStageValidatedResult> {
  const run = await lockRun(tx, cmd.runId);
  const [counts] = await tx.$queryRaw<Array<{ extracted_count: bigint; staging_count: bigint | null }>>`
    SELECT extracted_count, staging_count FROM nifi_ops.load_run WHERE run_id = ${cmd.runId}::uuid`;
  if (run.status === 'STAGING_VALIDATED') {
    return { stageValidated: true, runStatus: run.status, reasons: [], stagingCount: counts!.staging_count };
  }
  if (run.status !== 'STAGE_VALIDATING') {
    return { stageValidated: false, runStatus: run.status, reasons: [`RUN_STATUS ${run.status}`], stagingCount: null };
  }

  const verdict = judgeStage(await stageMetrics(tx, cmd.runId, 'STAGING'), {
    name: 'STAGE_COUNT',
    expected: counts!.extracted_count,
  });
  if (verdict.reasons.length > 0) {
    return { stageValidated: false, runStatus: run.status, reasons: verdict.reasons, stagingCount: null };
  }

  await transitionRun(
    tx,
    { runId: cmd.runId },
    {
      from: ['STAGE_VALIDATING'],
      to: 'STAGING_VALIDATED',
      set: Prisma.sql`staging_count = ${verdict.count}`,
      event: { level: 'INFO', name: 'STAGE_VALIDATED', runId: cmd.runId, actor: cmd.actor, rowCount: verdict.count },
    },
  );
  return { stageValidated: true, runStatus: 'STAGING_VALIDATED', reasons: [], stagingCount: verdict.count };
}

export const markStageValidatedOperation = inOneTransaction(markStageValidated);
