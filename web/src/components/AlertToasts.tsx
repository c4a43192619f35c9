import { useState } from 'react';
import { ALERT_RAISED } from '../api/operations';
import type { Alert } from '../api/operations';
import { useLive } from '../api/typed';
import { shortId } from '../format';
import { Link } from '../router';
import { Badge } from './Badge';
import { useAnnounce } from './Live';

const KEEP = 4;

/** New alerts as they are raised, wherever the operator is; they stay until dismissed. */
export function AlertToasts() {
  const announce = useAnnounce();
  const [alerts, setAlerts] = useState<Array<Alert & { key: number }>>([]);
  useLive(
    ALERT_RAISED,
    {},
    {
      onData: ({ alertRaised: alert }) => {
        if (!alert) return;
        setAlerts((old) => [{ ...alert, key: Date.now() + Math.random() }, ...old].slice(0, KEEP));
        announce(
          `New ${alert.severity === 'ERROR' ? 'error' : 'warning'}: ${alert.kind.replaceAll('_', ' ')} ${alert.jobKey ?? ''} ${alert.businessKey ?? ''}`,
        );
      },
    },
  );
  if (alerts.length === 0) return null;
  return (
    <aside className="toasts" aria-label="New alerts">
      <ul>
        {alerts.map((a) => (
          <li key={a.key} className="toast">
            <Badge status={a.severity} /> <strong>{a.kind.replaceAll('_', ' ')}</strong>{' '}
            {a.runId ? (
              <Link to={`/runs/${a.runId}`}>
                {a.jobKey} / {a.businessKey} ({shortId(a.runId)})
              </Link>
            ) : (
              <span>
                {a.jobKey} / {a.businessKey}
              </span>
            )}
            {a.message && <p className="message">{a.message.slice(0, 120)}</p>}
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
