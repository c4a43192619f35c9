// Readiness decided once: every change of a consumer's readiness for a business date is recorded with a version,
// by the triggers of prisma/functions/05_gate_readiness.sql (nifi_ops.decide_readiness) in the transaction of the
// attempt that changed it, and by defineGate for the dates it may have changed. Here they are read.
import type { Tx } from '../../db/client.js';
import { dateOfColumn } from './business-date.js';
import type { AttemptSource, Evidence } from './ledger.js';

export interface DecisionEvidence extends Evidence {
  source: AttemptSource;
}

export interface ReadinessDecision {
  consumer: string;
  businessDate: string;
  /** 1 the first time the date was ready, then one more per change of `ready` or of the evidence. */
  version: number;
  ready: boolean;
  /** The latest attempt of each required job when ready; empty when not. */
  evidence: DecisionEvidence[];
  /** What made the decision: the attempt ({source, jobId, runId, …}) or the gate's definition. */
  cause: Record<string, unknown>;
  decidedAt: Date;
}

export const MAX_DECISIONS_PAGE = 100;
/** How many business dates a gate's (re)definition decides at once: bounded work for one mutation. */
export const DECIDED_AT_DEFINITION = 31;

interface DecisionRow {
  consumer: string;
  businessDate: Date;
  version: number;
  ready: boolean;
  evidence: unknown;
  cause: unknown;
  decidedAt: Date;
}

function toDecision(row: DecisionRow): ReadinessDecision {
  return {
    consumer: row.consumer,
    businessDate: dateOfColumn(row.businessDate),
    version: row.version,
    ready: row.ready,
    evidence: row.evidence as DecisionEvidence[],
    cause: row.cause as Record<string, unknown>,
    decidedAt: row.decidedAt,
  };
}

/** The decisions of a consumer for a business date, newest first (the first is the current one). */
export async function listDecisions(tx: Tx, consumer: string, businessDate: string, last: number): Promise<ReadinessDecision[]> {
  const rows = await tx.$queryRaw<DecisionRow[]>`
    SELECT consumer, business_date AS "businessDate", version, ready, evidence, cause, decided_at AS "decidedAt"
      FROM nifi_ops.gate_readiness_decision
     WHERE consumer = ${consumer} AND business_date = ${businessDate}::date
     ORDER BY version DESC
     LIMIT ${last}`;
  return rows.map(toDecision);
}

/** The current decision of each (consumer, business date), or null when it was never ready: one statement. */
export async function currentDecisions(
  tx: Tx,
  keys: ReadonlyArray<{ consumer: string; businessDate: string }>,
): Promise<Array<ReadinessDecision | null>> {
  const rows = await tx.$queryRaw<Array<DecisionRow & { ordinal: bigint }>>`
    SELECT k.ordinal, d.consumer, d.business_date AS "businessDate", d.version, d.ready, d.evidence, d.cause,
           d.decided_at AS "decidedAt"
      FROM unnest(${keys.map((k) => k.consumer)}::text[], ${keys.map((k) => k.businessDate)}::date[])
           WITH ORDINALITY AS k(consumer, business_date, ordinal)
      CROSS JOIN LATERAL (
        SELECT * FROM nifi_ops.gate_readiness_decision d
         WHERE d.consumer = k.consumer AND d.business_date = k.business_date
         ORDER BY d.version DESC LIMIT 1) d`;
  const byOrdinal = new Map(rows.map((row) => [Number(row.ordinal), toDecision(row)]));
  return keys.map((_, i) => byOrdinal.get(i + 1) ?? null);
}

/**
 * Decides the consumer's readiness for the dates a (re)definition may have changed: the latest
 * DECIDED_AT_DEFINITION business dates among those with an attempt of a required job or a recorded decision.
 * Older dates are decided when their next attempt changes. Called by defineGate with the definitions locked.
 */
export async function decideAtDefinition(tx: Tx, consumer: string, requiredJobs: string[], actor: string): Promise<ReadinessDecision[]> {
  const cause = JSON.stringify({ source: 'DEFINITION', definedBy: actor });
  const decided = await tx.$queryRaw<Array<{ business_date: string; version: number | null }>>`
    WITH dates AS (
        SELECT d.business_date FROM nifi_ops.gate_readiness_decision d WHERE d.consumer = ${consumer}
        UNION
        SELECT o.business_date FROM nifi_ops.gate_observation o WHERE o.job_id = ANY (${requiredJobs}::text[])
        UNION
        SELECT nifi_ops.calendar_date(r.business_key) FROM nifi_ops.load_run r WHERE r.job_key = ANY (${requiredJobs}::text[])
    ), latest AS (
        SELECT business_date FROM dates WHERE business_date IS NOT NULL ORDER BY business_date DESC LIMIT ${DECIDED_AT_DEFINITION}
    )
    -- oldest first: the order the readiness locks are taken in
    SELECT to_char(l.business_date, 'YYYY-MM-DD') AS business_date,
           nifi_ops.decide_readiness(${consumer}, l.business_date, ${cause}::jsonb) AS version
      FROM (SELECT business_date FROM latest ORDER BY business_date) l`;
  const changed = decided.filter((d) => d.version !== null);
  if (changed.length === 0) return [];
  const rows = await tx.$queryRaw<DecisionRow[]>`
    SELECT d.consumer, d.business_date AS "businessDate", d.version, d.ready, d.evidence, d.cause, d.decided_at AS "decidedAt"
      FROM unnest(${changed.map((c) => c.business_date)}::date[], ${changed.map((c) => c.version)}::int[]) AS c(business_date, version)
      JOIN nifi_ops.gate_readiness_decision d ON d.consumer = ${consumer} AND d.business_date = c.business_date AND d.version = c.version
     ORDER BY d.business_date`;
  return rows.map(toDecision);
}
