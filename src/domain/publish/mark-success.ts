import type { Tx } from '../../db/client.js';
import { Prisma } from '../../generated/prisma/client.js';
import { lockRun } from '../runs/lock-run.js';
import type { RunStatus } from '../states.js';
import { transitionRun } from '../transitions.js';
import { countMismatch, judgeStage, stageMetrics } from '../validation/judge-metrics.js';
import { inOneTransaction } from '../../db/operation.js';

export interface MarkSuccessCommand {
  runId: string;
  targetCount: bigint | null;
  actor: string;
}

export interface MarkSuccessResult {
  success: boolean;
  runStatus: RunStatus;
  reasons: string[];
  targetCount: bigint | null;
}

/**
 * markSuccess (ref §3.14, deviations 7 and 8): PUBLISHED → SUCCESS when the stored TARGET metrics pass and
 * both TARGET_COUNT (when present) and targetCount (when given) equal the staging count. A run validated
 * without a STAGE_COUNT has no staging count; its extracted count, which staging was checked against
 * otherwise, is the expectation then.
 */
async function markSuccess(tx: Tx, cmd: MarkSuccessCommand): Promise<MarkSuccessResult> {
  const run = await lockRun(tx, cmd.runId);
  const [counts] = await tx.$queryRaw<Array<{ extracted_count: bigint; staging_count: bigint | null; target_count: bigint | null }>>`
    SELECT extracted_count, staging_count, target_count FROM nifi_ops.load_run WHERE run_id = ${cmd.runId}::uuid`;
  if (run.status === 'SUCCESS') return { success: true, runStatus: run.status, reasons: [], targetCount: counts!.target_count };
  if (run.status !== 'PUBLISHED') {
    return { success: false, runStatus: run.status, reasons: [`RUN_STATUS ${run.status}`], targetCount: null };
  }

  const expected = counts!.staging_count ?? counts!.extracted_count;
  const verdict = judgeStage(await stageMetrics(tx, cmd.runId, 'TARGET'), { name: 'TARGET_COUNT', expected });
  const reasons = [...verdict.reasons];
  if (cmd.targetCount !== null && cmd.targetCount !== expected) reasons.push(countMismatch('targetCount', cmd.targetCount, expected));
  if (reasons.length > 0) return { success: false, runStatus: run.status, reasons, targetCount: null };

  const targetCount = cmd.targetCount ?? verdict.count;
  await transitionRun(
    tx,
    { runId: cmd.runId },
    {
      from: ['PUBLISHED'],
      to: 'SUCCESS',
      set: Prisma.sql`target_count = ${targetCount}`,
      event: { level: 'INFO', name: 'RUN_SUCCESS', runId: cmd.runId, actor: cmd.actor, rowCount: targetCount },
    },
  );
  return { success: true, runStatus: 'SUCCESS', reasons: [], targetCount };
}

export const markSuccessOperation = inOneTransaction(markSuccess);
