import type { Tx } from '../../db/client.js';
import type { Gate } from '../../generated/prisma/client.js';
import { recordApiEvent } from '../events/events.js';
import { lockGateDefinitions } from './locks.js';

export interface DefineGateCommand {
  consumer: string;
  /** Distinct job ids; the gate requires exactly these. */
  requiredJobs: string[];
  /** The Load Control job whose createRun and claimPublish wait for this gate, or null. */
  boundJobKey: string | null;
  actor: string;
}

export interface GateRecord {
  consumer: string;
  requiredJobs: string[];
  boundJobKey: string | null;
  definedAt: Date;
  definedBy: string;
}

export interface DefineGateResult {
  gate: GateRecord;
  changed: boolean;
}

const withRequiredJobs = { requiredJobs: { orderBy: { jobId: 'asc' as const } } };

function toGateRecord(gate: Gate & { requiredJobs: Array<{ jobId: string }> }): GateRecord {
  return {
    consumer: gate.consumer,
    requiredJobs: gate.requiredJobs.map((job) => job.jobId),
    boundJobKey: gate.boundJobKey,
    definedAt: gate.definedAt,
    definedBy: gate.definedBy,
  };
}

async function getGate(tx: Tx, consumer: string): Promise<GateRecord | null> {
  const gate = await tx.gate.findUnique({ where: { consumer }, include: withRequiredJobs });
  return gate && toGateRecord(gate);
}

export async function listGates(tx: Tx): Promise<GateRecord[]> {
  const gates = await tx.gate.findMany({ orderBy: { consumer: 'asc' }, include: withRequiredJobs });
  return gates.map(toGateRecord);
}

/**
 * defineGate: the gate becomes exactly this definition (same definition again → changed: false). A job is
 * gated by at most one gate, so binding it here unbinds it from the gate that had it. Publications already
 * made keep the evidence they were made with.
 */
export async function defineGate(tx: Tx, cmd: DefineGateCommand): Promise<DefineGateResult> {
  await lockGateDefinitions(tx);
  const requiredJobs = [...cmd.requiredJobs].sort();
  const previous = await getGate(tx, cmd.consumer);
  if (
    previous &&
    previous.boundJobKey === cmd.boundJobKey &&
    previous.requiredJobs.length === requiredJobs.length &&
    previous.requiredJobs.every((job, i) => job === requiredJobs[i])
  ) {
    return { gate: previous, changed: false };
  }

  const unbound =
    cmd.boundJobKey === null
      ? []
      : await tx.$queryRaw<Array<{ consumer: string }>>`
    UPDATE nifi_ops.gate SET bound_job_key = NULL
     WHERE bound_job_key = ${cmd.boundJobKey} AND consumer <> ${cmd.consumer}
     RETURNING consumer`;
  await tx.$executeRaw`
    INSERT INTO nifi_ops.gate (consumer, bound_job_key, defined_by) VALUES (${cmd.consumer}, ${cmd.boundJobKey}, ${cmd.actor})
    ON CONFLICT (consumer) DO UPDATE
       SET bound_job_key = EXCLUDED.bound_job_key, defined_at = clock_timestamp(), defined_by = EXCLUDED.defined_by`;
  await tx.$executeRaw`
    DELETE FROM nifi_ops.gate_required_job WHERE consumer = ${cmd.consumer} AND job_id <> ALL(${requiredJobs}::text[])`;
  await tx.$executeRaw`
    INSERT INTO nifi_ops.gate_required_job (consumer, job_id)
    SELECT ${cmd.consumer}, job_id FROM unnest(${requiredJobs}::text[]) AS job_id
    ON CONFLICT DO NOTHING`;

  await recordApiEvent(tx, {
    level: 'INFO',
    name: 'GATE_DEFINED',
    runId: null,
    actor: cmd.actor,
    details: {
      consumer: cmd.consumer,
      requiredJobs,
      boundJobKey: cmd.boundJobKey,
      previous: previous && { requiredJobs: previous.requiredJobs, boundJobKey: previous.boundJobKey },
      ...(unbound[0] ? { boundJobKeyMovedFrom: unbound[0].consumer } : {}),
    },
  });
  return { gate: (await getGate(tx, cmd.consumer))!, changed: true };
}
