// The observation state machine and how Load Control run statuses read as observations, as data.
import { FAILED_RUN_STATUSES, TERMINAL_RUN_STATUSES, type RunStatus } from '../states.js';

export const OBSERVATION_STATES = ['RUNNING', 'SUCCEEDED', 'FAILED'] as const;
export type ObservationState = (typeof OBSERVATION_STATES)[number];

/** A RUNNING attempt may end once; a terminal state never changes (a repair is a new attempt). */
const OBSERVATION_TRANSITIONS: ReadonlyArray<readonly [ObservationState, ObservationState]> = [
  ['RUNNING', 'SUCCEEDED'],
  ['RUNNING', 'FAILED'],
];

export function canTransitionObservation(from: ObservationState, to: ObservationState): boolean {
  return OBSERVATION_TRANSITIONS.some(([f, t]) => f === from && t === to);
}

/** Why a required job blocks a gate: no attempt at all, or its latest attempt has not succeeded. */
export const BLOCKING_REASONS = ['MISSING', 'RUNNING', 'FAILED'] as const;
export type BlockingReason = (typeof BLOCKING_REASONS)[number];

/**
 * How a Load Control run reads as an observation: SUCCESS is SUCCEEDED, the failed statuses (FAILED_*, TIMED_OUT,
 * CANCELLED) are FAILED, and every active status (PUBLISHED included: target validation is still to come) is RUNNING.
 */
export const SUCCEEDED_RUN_STATUSES: readonly RunStatus[] = TERMINAL_RUN_STATUSES.filter((s) => !FAILED_RUN_STATUSES.includes(s));
