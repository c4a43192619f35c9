import { useState } from 'react';
import { ALERT_RAISED, type Alert, MONITOR_SUMMARY_CHANGED } from '../api/operations';
import { useLive } from '../api/typed';
import { shortId } from '../format';
import { Link } from '../router';
import { Badge } from './Badge';
import { useAnnounce } from './Live';

const KEEP = 4;
/** A summary this much newer than a toast reflects its alert: the summary is pushed at most about twice a second. */
const SETTLE_MS = 3000;

const alertKey = (a: Alert) => [a.kind, a.runId, a.dispatchId, a.partitionId, a.jobKey, a.businessKey, a.consumer].join(':');

/**
 * New alerts as they are raised, wherever the operator is. A toast goes when it is dismissed or when its alert clears
 * (the monitor summary no longer lists it). They sit in the page's flow under the header, never over its buttons.
 */
export function AlertToasts() {
  const announce = useAnnounce();
  const [alerts, setAlerts] = useState<Array<Alert & { key: string; shownAt: number }>>([]);
  useLive(
    ALERT_RAISED,
    {},
    {
      onData: ({ alertRaised: alert }) => {
        if (!alert) return;
        const key = alertKey(alert);
        setAlerts((old) => [{ ...alert, key, shownAt: Date.now() }, ...old.filter((a) => a.key !== key)].slice(0, KEEP));
        announce(
          `New ${alert.severity === 'ERROR' ? 'error' : 'warning'}: ${alert.kind.replaceAll('_', ' ')} ${alert.jobKey ?? ''} ${alert.businessKey ?? ''}`,
        );
      },
    },
  );
  useLive(
    MONITOR_SUMMARY_CHANGED,
    {},
    {
      onData: ({ monitorSummaryChanged: summary }) => {
        if (!summary) return;
        const current = new Set(summary.alerts.map(alertKey));
        const settled = Date.now() - SETTLE_MS;
        setAlerts((old) => {
          const kept = old.filter((a) => a.shownAt > settled || current.has(a.key));
          return kept.length === old.length ? old : kept;
        });
      },
    },
  );
  if (alerts.length === 0) return null;
  return (
    <aside className="toasts" aria-label="New alerts">
      <ul>
        {alerts.map((a) => (
          <li key={a.key} className="toast" data-toast={a.kind}>
            <Badge status={a.severity} /> <strong>{a.kind.replaceAll('_', ' ')}</strong>{' '}
            {a.runId ? (
              <Link to={`/runs/${a.runId}`}>
                {a.jobKey} / {a.businessKey} ({shortId(a.runId)})
              </Link>
            ) : (
              <span>
                {a.consumer ?? a.jobKey} / {a.businessKey}
              </span>
            )}
            {a.message && <p className="message">{a.message}</p>}
            <button
              type="button"
              className="link"
              onClick={() => setAlerts((old) => old.filter((x) => x.key !== a.key))}
              aria-label={`Dismiss ${a.kind} alert`}
            >
              Dismiss
            </button>
          </li>
        ))}
      </ul>
    </aside>
  );
}
