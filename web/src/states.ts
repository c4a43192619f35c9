// Statuses come from the server's state machines (src/domain/states.ts); here only their presentation.
// Which actions a run allows is the server's answer (Run.allowedActions).
export { PARTITION_STATUSES, RUN_STATUSES, RESENDABLE_DISPATCH_STATUSES } from '../../src/domain/states.js';
import { ACTIVE_RUN_STATUSES, REISSUABLE_PARTITION_STATUSES } from '../../src/domain/states.js';

export const isActive = (status: string): boolean => (ACTIVE_RUN_STATUSES as readonly string[]).includes(status);

/** Partitions reissuePartition accepts, in a run that allows REISSUE_PARTITION. */
export const isReissuable = (status: string): boolean => (REISSUABLE_PARTITION_STATUSES as readonly string[]).includes(status);

/** Short text shown inside partition grid cells, so status never depends on colour alone. */
export const PARTITION_ABBREVIATIONS: Record<string, string> = {
  PENDING: 'PEND',
  RUNNING: 'RUN',
  RETRY: 'RTRY',
  SUCCESS: 'OK',
  FAILED: 'FAIL',
  TIMED_OUT: 'TIME',
  ABANDONED: 'ABND',
};

/** A tone per status: the badge colour (always shown with the status text). */
export function tone(status: string): 'neutral' | 'busy' | 'wait' | 'good' | 'bad' | 'warn' | 'muted' {
  switch (status) {
    case 'SUCCESS':
    case 'ACKED':
    case 'PASS':
    case 'SUCCEEDED':
    case 'LIVE':
    case 'MET':
      return 'good';
    case 'EXTRACTING':
    case 'RUNNING':
    case 'STAGE_VALIDATING':
    case 'PUBLISHING':
    case 'SENT':
      return 'busy';
    case 'EXTRACTED_VALIDATED':
    case 'STAGING_VALIDATED':
    case 'PUBLISHED':
      return 'wait';
    case 'PUBLISH_UNKNOWN':
    case 'RETRY':
    case 'WARN':
    case 'MISSING':
    case 'STALE':
    case 'OBSERVATION_MISSING':
    case 'OBSERVATION_LATE':
    case 'STALLED_RUN':
    case 'STALLED':
      return 'warn';
    case 'CANCELLED':
    case 'ABANDONED':
      return 'muted';
    case 'CREATED':
    case 'PENDING':
    case 'INFO':
      return 'neutral';
    default:
      return status.startsWith('FAILED') || ['TIMED_OUT', 'DEAD', 'FAIL', 'ERROR', 'FAILED'].includes(status) ? 'bad' : 'neutral';
  }
}
