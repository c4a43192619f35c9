// The events an operator's action writes on a run: what the run page's "operator actions" filter keeps.

export const OPERATOR_EVENTS = {
  cancelRun: 'RUN_CANCELLED',
  resendDispatch: 'DISPATCH_RESENT',
  resolveUnknown: 'PUBLISH_UNKNOWN_RESOLVED',
  reissuePartition: 'RECOVERY_REISSUED',
  // resumeRun writes one on each run: the new attempt, and the failed run it resumes
  resumeRun: 'RUN_RESUMED',
  resumedAs: 'RUN_RESUMED_AS',
} as const;

export const OPERATOR_EVENT_NAMES: readonly string[] = Object.values(OPERATOR_EVENTS);
