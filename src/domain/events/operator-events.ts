// The events an operator's action writes on a run: what the run page's "operator actions" filter keeps.

export const OPERATOR_EVENTS = {
  cancelRun: 'RUN_CANCELLED',
  resendDispatch: 'DISPATCH_RESENT',
  resolveUnknown: 'PUBLISH_UNKNOWN_RESOLVED',
  reissuePartition: 'RECOVERY_REISSUED',
} as const;

export const OPERATOR_EVENT_NAMES: readonly string[] = Object.values(OPERATOR_EVENTS);
