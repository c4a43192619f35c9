import type { Tx } from '../../db/client.js';
import { Prisma } from '../../generated/prisma/client.js';
import { invalidInput } from '../../contract/errors.js';
import { recordApiEvent } from '../events/events.js';
import { decideAtDefinition, type ReadinessDecision } from './decisions.js';
import type { ExpectedBy } from './expected-by.js';
import { lockGateDefinitions } from './locks.js';
import { columnOfFormat, formatOfColumn, type GateReceiverFormat } from './receiver-formats.js';
import { inOneTransaction } from '../../db/operation.js';

export interface JobExpectedBy extends ExpectedBy {
  jobId: string;
}

export interface DefineGateCommand {
  consumer: string;
  /** Distinct job ids; the gate requires exactly these. */
  requiredJobs: string[];
  /** The Load Control job whose createRun and claimPublish wait for this gate, or null. */
  boundJobKey: string | null;
  /** Where each readiness decision is delivered (GATE_READY), or null. */
  notifyUrl: string | null;
  /**
   * What the receiver at notifyUrl takes: Load Control's own body (GENERIC, when left out), an Airflow asset event,
   * a Dagster materialization.
   */
  notifyFormat?: GateReceiverFormat;
  /** The orchestrator's asset (receiver-formats.ts); null or left out for GENERIC. */
  notifyAsset?: string | null;
  /** Deadlines of some required jobs (each at most once); the others have none. */
  expectedBy: JobExpectedBy[];
  actor: string;
}

export interface GateRecord {
  consumer: string;
  requiredJobs: string[];
  boundJobKey: string | null;
  notifyUrl: string | null;
  notifyFormat: GateReceiverFormat;
  notifyAsset: string | null;
  /** The required jobs that have a deadline, by job id. */
  expectedBy: JobExpectedBy[];
  definedAt: Date;
  definedBy: string;
}

export interface DefineGateResult {
  gate: GateRecord;
  changed: boolean;
  /** The readiness decisions this definition recorded (dates it made ready, or no longer ready). */
  decisions: ReadinessDecision[];
}

/** A gate with its required jobs in job order; a job's deadline, when it has one, as HH:MM (expected_time is time(0)). */
interface GateRow {
  consumer: string;
  boundJobKey: string | null;
  notifyUrl: string | null;
  notifyFormat: string | null;
  notifyAsset: string | null;
  definedAt: Date;
  definedBy: string;
  requiredJobs: Array<{ jobId: string; daysAfter: number | null; time: string | null; timeZone: string | null }>;
}

function toGateRecord(gate: GateRow): GateRecord {
  return {
    consumer: gate.consumer,
    requiredJobs: gate.requiredJobs.map((job) => job.jobId),
    boundJobKey: gate.boundJobKey,
    notifyUrl: gate.notifyUrl,
    notifyFormat: formatOfColumn(gate.notifyFormat),
    notifyAsset: gate.notifyAsset,
    expectedBy: gate.requiredJobs.flatMap((job) =>
      job.daysAfter === null ? [] : [{ jobId: job.jobId, daysAfter: job.daysAfter, time: job.time!, timeZone: job.timeZone! }],
    ),
    definedAt: gate.definedAt,
    definedBy: gate.definedBy,
  };
}

/** The gates `where` selects, in consumer order. */
async function gates(tx: Tx, where: Prisma.Sql): Promise<GateRecord[]> {
  const rows = await tx.$queryRaw<GateRow[]>`
    SELECT g.consumer, g.bound_job_key AS "boundJobKey", g.notify_url AS "notifyUrl", g.notify_format AS "notifyFormat",
           g.notify_asset AS "notifyAsset", g.defined_at AS "definedAt",
           g.defined_by AS "definedBy",
           COALESCE((SELECT jsonb_agg(jsonb_build_object('jobId', j.job_id, 'daysAfter', j.expected_days_after,
                                                         'time', to_char(j.expected_time, 'HH24:MI'), 'timeZone', j.expected_time_zone)
                                      ORDER BY j.job_id)
                       FROM nifi_ops.gate_required_job j WHERE j.consumer = g.consumer), '[]') AS "requiredJobs"
      FROM nifi_ops.gate g
     WHERE ${where}
     ORDER BY g.consumer`;
  return rows.map(toGateRecord);
}

export async function getGate(tx: Tx, consumer: string): Promise<GateRecord | null> {
  const [gate] = await gates(tx, Prisma.sql`g.consumer = ${consumer}`);
  return gate ?? null;
}

export function listGates(tx: Tx): Promise<GateRecord[]> {
  return gates(tx, Prisma.sql`true`);
}

const expectationKey = (jobs: JobExpectedBy[]): string =>
  jobs
    .map((e) => `${e.jobId} ${e.daysAfter} ${e.time} ${e.timeZone}`)
    .sort()
    .join('\n');

function sameDefinition(previous: GateRecord, cmd: Required<DefineGateCommand>, requiredJobs: string[]): boolean {
  return (
    previous.boundJobKey === cmd.boundJobKey &&
    previous.notifyUrl === cmd.notifyUrl &&
    previous.notifyFormat === cmd.notifyFormat &&
    previous.notifyAsset === cmd.notifyAsset &&
    previous.requiredJobs.length === requiredJobs.length &&
    previous.requiredJobs.every((job, i) => job === requiredJobs[i]) &&
    expectationKey(previous.expectedBy) === expectationKey(cmd.expectedBy)
  );
}

/** Refuses a time zone PostgreSQL's tz database does not know (it may lag the API's), before anything is written. */
async function assertKnownTimeZones(tx: Tx, expectedBy: JobExpectedBy[]): Promise<void> {
  const zones = [...new Set(expectedBy.map((e) => e.timeZone))];
  if (zones.length === 0) return;
  const unknown = await tx.$queryRaw<Array<{ zone: string }>>`
    SELECT zone FROM unnest(${zones}::text[]) AS zone WHERE NOT nifi_ops.is_time_zone(zone) LIMIT 1`;
  if (unknown[0]) {
    const index = expectedBy.findIndex((e) => e.timeZone === unknown[0]!.zone);
    throw invalidInput(`input.expectedBy.${index}.timeZone`, `${unknown[0].zone} is not a time zone the database knows`);
  }
}

/**
 * defineGate: the gate becomes exactly this definition (same definition again → changed: false). A job is
 * gated by at most one gate, so binding it here unbinds it from the gate that had it. Publications already
 * made keep the evidence they were made with. A changed definition decides the gate's readiness for the dates
 * it may have changed (decisions.ts: a gate defined after its observations exist is decided at once).
 */
export async function defineGate(tx: Tx, command: DefineGateCommand): Promise<DefineGateResult> {
  const cmd = { ...command, notifyFormat: command.notifyFormat ?? 'GENERIC', notifyAsset: command.notifyAsset ?? null };
  await lockGateDefinitions(tx);
  const requiredJobs = [...cmd.requiredJobs].sort();
  const previous = await getGate(tx, cmd.consumer);
  if (previous && sameDefinition(previous, cmd, requiredJobs)) return { gate: previous, changed: false, decisions: [] };
  await assertKnownTimeZones(tx, cmd.expectedBy);

  const unbound =
    cmd.boundJobKey === null
      ? []
      : await tx.$queryRaw<Array<{ consumer: string }>>`
    UPDATE nifi_ops.gate SET bound_job_key = NULL
     WHERE bound_job_key = ${cmd.boundJobKey} AND consumer <> ${cmd.consumer}
     RETURNING consumer`;
  await tx.$executeRaw`
    INSERT INTO nifi_ops.gate (consumer, bound_job_key, notify_url, notify_format, notify_asset, defined_by)
    VALUES (${cmd.consumer}, ${cmd.boundJobKey}, ${cmd.notifyUrl}, ${columnOfFormat(cmd.notifyFormat)}, ${cmd.notifyAsset}, ${cmd.actor})
    ON CONFLICT (consumer) DO UPDATE
       SET bound_job_key = EXCLUDED.bound_job_key, notify_url = EXCLUDED.notify_url, notify_format = EXCLUDED.notify_format,
           notify_asset = EXCLUDED.notify_asset, defined_at = clock_timestamp(),
           defined_by = EXCLUDED.defined_by`;
  await tx.$executeRaw`
    DELETE FROM nifi_ops.gate_required_job WHERE consumer = ${cmd.consumer} AND job_id <> ALL(${requiredJobs}::text[])`;
  const expected = new Map(cmd.expectedBy.map((e) => [e.jobId, e]));
  const column = <T>(value: (e: JobExpectedBy) => T) => requiredJobs.map((job) => (expected.has(job) ? value(expected.get(job)!) : null));
  // an expectation that did not change keeps its expected_since: deadlines it passed were already checked
  await tx.$executeRaw`
    INSERT INTO nifi_ops.gate_required_job AS q
           (consumer, job_id, expected_days_after, expected_time, expected_time_zone, expected_since)
    SELECT ${cmd.consumer}, j.job_id, j.days_after, j.at::time, j.time_zone, CASE WHEN j.days_after IS NULL THEN NULL ELSE clock_timestamp() END
      FROM unnest(${requiredJobs}::text[], ${column((e) => e.daysAfter)}::smallint[], ${column((e) => e.time)}::text[],
                  ${column((e) => e.timeZone)}::text[]) AS j(job_id, days_after, at, time_zone)
    ON CONFLICT (consumer, job_id) DO UPDATE
       SET expected_days_after = EXCLUDED.expected_days_after, expected_time = EXCLUDED.expected_time,
           expected_time_zone = EXCLUDED.expected_time_zone,
           expected_since = CASE
               WHEN (q.expected_days_after, q.expected_time, q.expected_time_zone)
                    IS NOT DISTINCT FROM (EXCLUDED.expected_days_after, EXCLUDED.expected_time, EXCLUDED.expected_time_zone)
               THEN q.expected_since ELSE EXCLUDED.expected_since END`;

  const decisions = await decideAtDefinition(tx, cmd.consumer, requiredJobs, cmd.actor);
  await recordApiEvent(tx, {
    level: 'INFO',
    name: 'GATE_DEFINED',
    runId: null,
    actor: cmd.actor,
    details: {
      consumer: cmd.consumer,
      requiredJobs,
      boundJobKey: cmd.boundJobKey,
      notifyUrl: cmd.notifyUrl,
      notifyFormat: cmd.notifyFormat,
      notifyAsset: cmd.notifyAsset,
      expectedBy: cmd.expectedBy,
      previous: previous && {
        requiredJobs: previous.requiredJobs,
        boundJobKey: previous.boundJobKey,
        notifyUrl: previous.notifyUrl,
        notifyFormat: previous.notifyFormat,
        notifyAsset: previous.notifyAsset,
        expectedBy: previous.expectedBy,
      },
      decisions: decisions.map((d) => ({ businessDate: d.businessDate, version: d.version, ready: d.ready })),
      ...(unbound[0] ? { boundJobKeyMovedFrom: unbound[0].consumer } : {}),
    },
  });
  return { gate: (await getGate(tx, cmd.consumer))!, changed: true, decisions };
}

export const defineGateOperation = inOneTransaction(defineGate);
