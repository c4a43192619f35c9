// What an operator needs to resolve a PUBLISH_UNKNOWN safely (issue 32, point 5): who raised it and when, what
// PG-50 reported (its message, query id and details) — or that the sweeper raised it because PG-50 never
// reported —, the publish window, the rows the target should hold, and the job's check on the target
// (console.publishChecks), its placeholders filled from the run. The ledger itself does not know the target
// table: the flow's INSERT OVERWRITE names it, so it comes from the configuration (or the run's parameters,
// through a placeholder).
import type { Tx } from '../../db/client.js';
import type { RunRecord } from '../runs/queries.js';
import { SWEEPER_ACTOR } from '../sweeper/settings.js';

/** console.publishChecks[]: the first whose `job` (a job key or a pattern with `*`) matches the run's job. */
export interface PublishCheck {
  job: string;
  target: string | null;
  query: string;
}

export const PUBLISH_UNKNOWN_RAISERS = ['PG50', 'SWEEPER'] as const;
type PublishUnknownRaiser = (typeof PUBLISH_UNKNOWN_RAISERS)[number];

export interface PublishUnknownKit {
  raisedBy: PublishUnknownRaiser;
  raisedAt: Date;
  /** The token name of the PG-50 call, or the sweeper. */
  actor: string | null;
  errorCode: string | null;
  /** PG-50's message (raisedBy PG50), or the sweeper's reason (raisedBy SWEEPER). */
  message: string | null;
  /** What PG-50 sent as reportPublishResult.details; null when the sweeper raised it. */
  reportedDetails: Record<string, unknown> | null;
  queryId: string | null;
  publishStartedAt: Date | null;
  /** The rows the target partition should hold: the staging count. */
  expectedRows: bigint | null;
  /** The matching check's `job`; null when none matches. */
  checkJob: string | null;
  target: string | null;
  checkQuery: string | null;
}

/** The keys reportPublishResult adds to PG-50's details in its event: not PG-50's. */
const OWN_DETAIL_KEYS = new Set(['stage', 'from', 'to', 'queryId']);

const matches = (pattern: string, jobKey: string) =>
  new RegExp(
    `^${pattern
      .split('*')
      .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
      .join('.*')}$`,
  ).test(jobKey);

/** The check's text with {name} and {parameters.NAME} filled from the run; a placeholder without a value stays as written. */
export function fillPlaceholders(template: string, values: Record<string, string | null>, parameters: Record<string, unknown>): string {
  return template.replace(/\{([A-Za-z][A-Za-z0-9_.]*)\}/g, (whole, name: string) => {
    const value = name.startsWith('parameters.') ? parameters[name.slice('parameters.'.length)] : values[name];
    return value === null || value === undefined || typeof value === 'object' ? whole : String(value);
  });
}

/** The kit of a run that has been PUBLISH_UNKNOWN (its latest such event); null for one that never was. */
export async function publishUnknownKit(tx: Tx, run: RunRecord, checks: readonly PublishCheck[]): Promise<PublishUnknownKit | null> {
  const [event] = await tx.$queryRaw<
    Array<{
      event_time: Date;
      actor: string | null;
      actor_auth: string | null;
      error_code: string | null;
      message: string | null;
      details: Record<string, unknown> | null;
    }>
  >`
    SELECT event_time, actor, actor_auth, error_code, message, details FROM nifi_ops.load_event
     WHERE run_id = ${run.runId}::uuid AND event_name = 'PUBLISH_UNKNOWN'
     ORDER BY event_time DESC LIMIT 1`;
  if (!event) return null;
  // the sweeper's own events carry no authentication (a worker is nobody's token)
  const raisedBy: PublishUnknownRaiser = event.actor === SWEEPER_ACTOR && event.actor_auth === null ? 'SWEEPER' : 'PG50';
  const reported = Object.fromEntries(Object.entries(event.details ?? {}).filter(([key]) => !OWN_DETAIL_KEYS.has(key)));
  const parameters = run.parameters !== null && typeof run.parameters === 'object' && !Array.isArray(run.parameters) ? run.parameters : {};
  const values = {
    runId: run.runId,
    jobKey: run.jobKey,
    businessKey: run.businessKey,
    stageTable: run.stageTableName,
    publishToken: run.publishToken,
    queryId: run.publishQueryId,
    expectedRows: run.stagingCount === null ? null : String(run.stagingCount),
  };
  const check = checks.find((c) => matches(c.job, run.jobKey)) ?? null;
  return {
    raisedBy,
    raisedAt: event.event_time,
    actor: event.actor,
    errorCode: event.error_code,
    message: event.message,
    reportedDetails: raisedBy === 'PG50' ? reported : null,
    queryId: run.publishQueryId,
    publishStartedAt: run.publishStartedAt,
    expectedRows: run.stagingCount,
    checkJob: check?.job ?? null,
    target: check?.target ? fillPlaceholders(check.target, values, parameters) : null,
    checkQuery: check ? fillPlaceholders(check.query, values, parameters) : null,
  };
}
