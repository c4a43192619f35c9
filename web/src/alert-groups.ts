// How the console names an alert group and its cause (MonitorSummary.alertGroups; an alert's groupKey is
// "KIND:CAUSE_TYPE:cause"): the same words in the alerts list and in the toasts.
import type { AlertGroup } from './api/operations';

type Cause = Pick<AlertGroup, 'causeType' | 'cause'>;

/** DISPATCH_DEAD → "Dispatch dead". */
export const kindLabel = (kind: string): string => kind.charAt(0) + kind.slice(1).toLowerCase().replaceAll('_', ' ');

/** What the group's alerts have in common, in words. */
export function causeLabel({ causeType, cause }: Cause): string {
  switch (causeType) {
    case 'RECEIVER':
      return `webhook receiver ${cause}`;
    case 'CONSUMER':
      return `gate ${cause}`;
    case 'JOB':
      return `job ${cause}`;
    case 'PROCESSES':
      return 'the processes';
  }
}

/** The console's page of the cause: a gate's, a job's runs; none for a receiver or the processes (the dashboard). */
export function causePath({ causeType, cause }: Cause): string | null {
  if (causeType === 'CONSUMER') return `/gates/${encodeURIComponent(cause)}`;
  if (causeType === 'JOB') return `/jobs/${encodeURIComponent(cause)}`;
  return null;
}

/** An alert's group key read back: its kind and cause. */
export function causeOfKey(groupKey: string): Cause & { kind: string } {
  const [kind = '', causeType = 'PROCESSES', ...rest] = groupKey.split(':');
  return { kind, causeType: causeType as AlertGroup['causeType'], cause: rest.join(':') };
}

/** "Dispatch dead — webhook receiver ops-hook". */
export const groupTitle = (group: Cause & { kind: string }): string => `${kindLabel(group.kind)} — ${causeLabel(group)}`;
