import { useEffect, useState } from 'react';
import { causeOfKey, causePath, groupTitle } from '../alert-groups';
import { ALERT_RAISED, type Alert, MONITOR_SUMMARY_CHANGED } from '../api/operations';
import { useLive } from '../api/typed';
import { shortId } from '../format';
import { Link } from '../router';
import { Badge } from './Badge';
import { useAnnounce } from './Live';

/** Toasts kept, and shown at once on a wide screen; a phone shows fewer so that its first screen is the page's. */
const KEEP = 4;
const PHONE_SHOWN = 2;
const PHONE = '(max-width: 640px)';
/** A toast whose group no summary has listed yet goes once it is this old (summaries are pushed about twice a second). */
const SETTLE_MS = 3000;

interface Toast {
  groupKey: string;
  /** The group's newest alert raised while the toast is up. */
  alert: Alert;
  /** How many of its alerts were raised while it is up. */
  raised: number;
  shownAt: number;
  listed: boolean;
}

function usePhone(): boolean {
  const [phone, setPhone] = useState(() => window.matchMedia(PHONE).matches);
  useEffect(() => {
    const query = window.matchMedia(PHONE);
    const changed = () => setPhone(query.matches);
    query.addEventListener('change', changed);
    return () => query.removeEventListener('change', changed);
  }, []);
  return phone;
}

/** Where a toast leads: its alert's run, else its cause's page (a gate, a job), else the dashboard's alerts. */
function ToastSubject({ alert }: { alert: Alert }) {
  if (alert.runId)
    return (
      <Link to={`/runs/${alert.runId}`}>
        {alert.jobKey} / {alert.businessKey} ({shortId(alert.runId)})
      </Link>
    );
  const path = causePath(causeOfKey(alert.groupKey));
  return <Link to={path ?? '/'}>{path ? `Open ${alert.consumer ? 'the gate' : 'the job'}` : 'See the alerts'}</Link>;
}

/**
 * New alerts as they are raised, wherever the operator is: one toast per alert group (kind and cause), with how
 * many of its alerts came while it is up. A toast goes when dismissed, when its group clears or is snoozed. They
 * sit in the page's flow under the header, never over its buttons.
 */
export function AlertToasts() {
  const announce = useAnnounce();
  const phone = usePhone();
  const [toasts, setToasts] = useState<Toast[]>([]);
  const [snoozed, setSnoozed] = useState<ReadonlySet<string>>(new Set());
  useLive(
    ALERT_RAISED,
    {},
    {
      onData: ({ alertRaised: alert }) => {
        if (!alert || snoozed.has(alert.groupKey)) return;
        setToasts((old) => {
          const before = old.find((t) => t.groupKey === alert.groupKey);
          const toast = {
            groupKey: alert.groupKey,
            alert,
            raised: (before?.raised ?? 0) + 1,
            shownAt: Date.now(),
            listed: before?.listed ?? false,
          };
          return [toast, ...old.filter((t) => t.groupKey !== alert.groupKey)].slice(0, KEEP);
        });
        announce(`New ${alert.severity === 'ERROR' ? 'error' : 'warning'}: ${groupTitle(causeOfKey(alert.groupKey))}`);
      },
    },
  );
  useLive(
    MONITOR_SUMMARY_CHANGED,
    {},
    {
      onData: ({ monitorSummaryChanged: summary }) => {
        if (!summary) return;
        const current = new Set(summary.alertGroups.filter((g) => !g.snooze).map((g) => g.groupKey));
        setSnoozed(new Set(summary.alertGroups.filter((g) => g.snooze).map((g) => g.groupKey)));
        const settled = Date.now() - SETTLE_MS;
        // a toast goes when a summary stops listing its group, or snoozes it (or never listed it and the toast has settled)
        setToasts((old) => {
          const next = old
            .filter((t) => current.has(t.groupKey) || (!t.listed && t.shownAt > settled))
            .map((t) => (current.has(t.groupKey) && !t.listed ? { ...t, listed: true } : t));
          return next.length === old.length && next.every((t, i) => t === old[i]) ? old : next;
        });
      },
    },
  );
  if (toasts.length === 0) return null;
  const shown = toasts.slice(0, phone ? PHONE_SHOWN : KEEP);
  const more = toasts.length - shown.length;
  return (
    <aside className="toasts" aria-label="New alerts">
      <ul>
        {shown.map(({ groupKey, alert, raised }) => {
          const title = groupTitle(causeOfKey(groupKey));
          return (
            <li key={groupKey} className="toast" data-toast={alert.kind} data-group={groupKey}>
              <Badge status={alert.severity} /> <strong>{title}</strong>
              {raised > 1 && <span className="muted"> · {raised} new</span>} <ToastSubject alert={alert} />
              {alert.message && <p className="message">{alert.message}</p>}
              <button
                type="button"
                className="link"
                onClick={() => setToasts((old) => old.filter((t) => t.groupKey !== groupKey))}
                aria-label={`Dismiss ${title}`}
              >
                Dismiss
              </button>
            </li>
          );
        })}
        {(more > 0 || toasts.length > 1) && (
          <li className="toasts-more">
            {more > 0 && (
              <span>
                {more} more alert group{more === 1 ? '' : 's'}: <Link to="/">see the alerts</Link>
              </span>
            )}
            <button type="button" className="link" onClick={() => setToasts([])}>
              Dismiss all
            </button>
          </li>
        )}
      </ul>
    </aside>
  );
}
