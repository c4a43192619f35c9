// The observation state machine, as data. How a Load Control run status reads as an observation state is
// nifi_ops.run_observation_state (prisma/functions/05_gate_readiness.sql; its failed statuses are held equal to
// states.ts by test/domain/states.test.ts).

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
