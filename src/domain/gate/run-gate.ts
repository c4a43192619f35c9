// A Load Control job bound to a gate waits for it: createRun and claimPublish refuse with
// DEPENDENCIES_NOT_READY while the gate is not ready for the business date the run's business key names.
import type { AfterCommit } from '../../db/after-commit.js';
import type { Tx } from '../../db/client.js';
import { DomainError, invalidInput } from '../../contract/errors.js';
import { recordNifiEvent } from '../events/events.js';
import { calendarDate } from './business-date.js';
import { notReadyDetails, notReadyMessage, readiness, type Readiness } from './ledger.js';

/** A step of a Load Control run that a gate may hold back. */
export interface GatedStep {
  jobKey: string;
  businessKey: string;
  /** Null for createRun: the run does not exist yet. */
  runId: string | null;
  actor: string;
}

/** DEPENDENCIES_NOT_READY for a gated step, carrying what its WARN event records. */
export class GatedStepNotReady extends DomainError {
  constructor(
    readonly step: GatedStep,
    readonly notReady: Readiness,
  ) {
    super(
      'DEPENDENCIES_NOT_READY',
      { jobKey: step.jobKey, businessKey: step.businessKey, ...notReadyDetails(notReady) },
      notReadyMessage(notReady),
    );
  }
}

/** The consumer whose gate the job is bound to, or null. */
export async function boundConsumer(tx: Tx, jobKey: string): Promise<string | null> {
  const [gate] = await tx.$queryRaw<Array<{ consumer: string }>>`
    SELECT consumer FROM nifi_ops.gate WHERE bound_job_key = ${jobKey} LIMIT 1`;
  return gate?.consumer ?? null;
}

/** createRun's check: a gated job's run needs a calendar-date business key and a ready gate for that date. */
export async function assertRunGateReady(tx: Tx, step: GatedStep): Promise<void> {
  const consumer = await boundConsumer(tx, step.jobKey);
  if (consumer === null) return;
  const businessDate = calendarDate(step.businessKey);
  if (businessDate === null) {
    throw invalidInput('input.businessKey', `${step.jobKey} is gated by ${consumer}: the business key must be a calendar date YYYY-MM-DD`);
  }
  const current = await readiness(tx, consumer, businessDate);
  if (!current.ready) throw new GatedStepNotReady(step, current);
}

/**
 * Runs a step a gate can refuse, in the caller's transaction. A refusal undoes the step, to a savepoint taken
 * before it (which gives back the locks the step took, as a rollback would), then writes its WARN event
 * DEPENDENCIES_NOT_READY (what the operators' alert is made of) and raises it once that event committed.
 */
export async function refusableByGate<T>(tx: Tx, afterCommit: AfterCommit, step: () => Promise<T>): Promise<T> {
  await tx.$executeRaw`SAVEPOINT gated_step`;
  try {
    return await step();
  } catch (error) {
    if (!(error instanceof GatedStepNotReady)) throw error;
    await tx.$executeRaw`ROLLBACK TO SAVEPOINT gated_step`;
    await recordNifiEvent(tx, {
      level: 'WARN',
      name: 'DEPENDENCIES_NOT_READY',
      runId: error.step.runId,
      jobKey: error.step.jobKey,
      businessKey: error.step.businessKey,
      processGroup: 'LOAD_CONTROL_API',
      processorName: 'dependencies_not_ready',
      errorCode: 'DEPENDENCIES_NOT_READY',
      message: error.message.slice(0, 2000),
      details: error.details,
      actor: error.step.actor,
    });
    return afterCommit.raise(error);
  }
}
