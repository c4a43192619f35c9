import { useState } from 'react';
import { ALERT_RAISED, type Alert, MONITOR_SUMMARY_CHANGED } from '../api/operations';
import { useLive } from '../api/typed';
import { shortId } from '../format';
import { Link } from '../router';
import { Badge } from './Badge';
import { useAnnounce } from './Live';

const KEEP = 4;
/** A toast whose alert no summary has listed yet goes once it is this old (summaries are pushed about twice a second). */
const SETTLE_MS = 3000;

const alertKey = (a: Alert) => [a.kind, a.runId, a.dispatchId, a.partitionId, a.jobKey, a.businessKey, a.consumer].join(':');

/**
 * New alerts as they are raised, wherever the operator is. A toast goes when it is dismissed or when its alert clears
 * (the monitor summary no longer lists it). They sit in the page's flow under the header, never over its buttons.
 */
export function AlertToasts() {
  const announce = useAnnounce();
  const [alerts, setAlerts] = useState<Array<Alert & { key: string; shownAt: number; listed: boolean }>>([]);
  useLive(
    ALERT_RAISED,
    {},
    {
      onData: ({ alertRaised: alert }) => {
        if (!alert) return;
        const key = alertKey(alert);
        setAlerts((old) => [{ ...alert, key, shownAt: Date.now(), listed: false }, ...old.filter((a) => a.key !== key)].slice(0, KEEP));
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
        // a toast goes when a summary stops listing its alert (or never listed it and the toast has settled)
        setAlerts((old) => {
          const next = old
            .filter((a) => current.has(a.key) || (!a.listed && a.shownAt > settled))
            .map((a) => (current.has(a.key) && !a.listed ? { ...a, listed: true } : a));
          return next.length === old.length && next.every((a, i) => a === old[i]) ? old : next;
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
