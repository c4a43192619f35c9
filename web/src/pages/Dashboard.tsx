import { useCallback, useEffect, useState } from 'react';
import { describeError } from '../api/client';
import {
  ALERT_WEBHOOK_CALLS,
  type AlertWebhookCall,
  MONITOR_SUMMARY,
  MONITOR_SUMMARY_CHANGED,
  PROCESSES,
  type Alert,
  type MonitorSummary,
  type ProcessInstance,
  type StatusCount,
} from '../api/operations';
import { RESEND_DISPATCH, RESOLVE_UNKNOWN } from '../../../documents/operator.js';
import { useApi, useLive } from '../api/typed';
import { ConfirmDialog, ResolveDialog } from '../components/ActionDialogs';
import { Badge } from '../components/Badge';
import { LiveIndicator, useAnnounce } from '../components/Live';
import { OperatorButton } from '../components/OperatorButton';
import { RunsList } from '../components/RunsList';
import { count, elapsed, formatTime, shortId } from '../format';
import { type LiveState, useNow, worst } from '../hooks';
import { Link } from '../router';

function Counts({ title, counts, empty }: { title: string; counts: StatusCount[]; empty: string }) {
  return (
    <section className="card" aria-labelledby={`counts-${title}`}>
      <h2 id={`counts-${title}`}>{title}</h2>
      {counts.length === 0 ? (
        <p className="muted">{empty}</p>
      ) : (
        <ul className="counts">
          {counts.map((c) => (
            <li key={c.status}>
              <Badge status={c.status} /> <strong>{count(c.count)}</strong>
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}

/** The installation's processes: which are live, which stopped beating, and whether anyone delivers calls. */
function Processes({ processes, now }: { processes: ProcessInstance[] | null; now: number }) {
  const current = processes?.filter((p) => p.state !== 'STOPPED') ?? [];
  const dispatching = current.some((p) => p.state === 'LIVE' && p.dispatcher);
  return (
    <section className="card" aria-labelledby="processes-title">
      <h2 id="processes-title">Processes</h2>
      {processes && !dispatching && (
        <p className="attention" role="status">
          No dispatcher is running: calls to NiFi wait until a <code>load-control work</code> process starts.
        </p>
      )}
      {processes && current.length === 0 ? (
        <p className="muted">None registered.</p>
      ) : (
        <ul className="processes">
          {current.map((p) => (
            <li key={p.instanceId} className={p.state === 'STALE' ? 'attention' : undefined}>
              <Badge status={p.state} /> <strong>{p.role}</strong> {p.host} <span className="muted">pid {p.pid}</span>
              {p.dispatcher && ' · dispatcher'}
              {p.sweeper && ' · sweeper'}
              <span className="muted"> · seen {elapsed(p.lastSeenAt, null, now)} ago</span>
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}

const NOTIFICATIONS_SHOWN = 10;

/** The latest alert notifications (alerts.webhooks): to which receiver, about what, and how the delivery went. */
function Notifications({ calls }: { calls: AlertWebhookCall[] | null }) {
  if (!calls || calls.length === 0) return null;
  return (
    <section aria-labelledby="notifications-title">
      <h2 id="notifications-title">Notifications</h2>
      <div className="table-wrap" tabIndex={0} role="region" aria-labelledby="notifications-title">
        <table>
          <thead>
            <tr>
              <th scope="col">Delivery</th>
              <th scope="col">Receiver</th>
              <th scope="col">Kind</th>
              <th scope="col">Run</th>
              <th scope="col">Attempts</th>
              <th scope="col">HTTP</th>
              <th scope="col">Queued</th>
              <th scope="col">Last error</th>
            </tr>
          </thead>
          <tbody>
            {calls.map((c) => (
              <tr key={c.dispatchId} className={c.status === 'DEAD' ? 'row-error' : undefined}>
                <td>
                  <Badge status={c.status} />
                </td>
                <td>{c.receiver}</td>
                <td>{c.occurrence.kind.replaceAll('_', ' ')}</td>
                <td>
                  {c.occurrence.runId ? (
                    <Link to={`/runs/${c.occurrence.runId}`} aria-label={`Run ${c.occurrence.runId}`}>
                      {shortId(c.occurrence.runId)}
                    </Link>
                  ) : (
                    '—'
                  )}
                </td>
                <td>{c.attemptCount}</td>
                <td>{c.lastHttpStatus ?? '—'}</td>
                <td>{formatTime(c.createdAt)}</td>
                <td className="message">{c.lastError ?? '—'}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </section>
  );
}

type Action = { kind: 'resend'; alert: Alert } | { kind: 'resolve'; alert: Alert };

export function Dashboard() {
  const api = useApi();
  const announce = useAnnounce();
  const now = useNow();
  const [summary, setSummary] = useState<MonitorSummary | null>(null);
  const [processes, setProcesses] = useState<ProcessInstance[] | null>(null);
  const [notifications, setNotifications] = useState<AlertWebhookCall[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [action, setAction] = useState<Action | null>(null);
  const [runsLive, setRunsLive] = useState<LiveState>('connecting');

  const loadSummary = useCallback(() => {
    api
      .request(MONITOR_SUMMARY)
      .then((d) => {
        setSummary(d.monitorSummary);
        setError(null);
      })
      .catch((e) => setError(describeError(e)));
  }, [api]);

  useEffect(() => loadSummary(), [loadSummary]);
  // the summary is pushed when it changes and at least every 15 s: the processes are read again with it
  useEffect(() => {
    if (!summary) return;
    api
      .request(PROCESSES)
      .then((d) => setProcesses(d.processes))
      .catch((e) => setError(describeError(e)));
    api
      .request(ALERT_WEBHOOK_CALLS, { last: NOTIFICATIONS_SHOWN })
      .then((d) => setNotifications(d.alertWebhookCalls))
      .catch((e) => setError(describeError(e)));
  }, [api, summary]);

  const summaryLive = useLive(
    MONITOR_SUMMARY_CHANGED,
    {},
    {
      onData: (d) => d.monitorSummaryChanged && setSummary(d.monitorSummaryChanged),
      onConnected: (reconnected) => reconnected && loadSummary(),
    },
  );

  const dispatch = (status: string) => summary?.dispatches.find((d) => d.status === status)?.count ?? 0;

  return (
    <>
      <div className="page-head">
        <h1 tabIndex={-1}>Dashboard</h1>
        <LiveIndicator state={worst(summaryLive, runsLive)} />
      </div>
      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}

      {!summary && <p className="muted">{error ? 'Counts unavailable until the API answers again.' : 'Loading…'}</p>}
      <div className="cards" hidden={!summary}>
        <Counts title="Active runs" counts={summary?.activeRuns ?? []} empty="No active runs." />
        <Counts title={`Finished in ${summary?.recentWindowHours ?? 24} h`} counts={summary?.recentRuns ?? []} empty="None." />
        <section className="card" aria-labelledby="backlog-title">
          <h2 id="backlog-title">Dispatch backlog</h2>
          <ul className="counts">
            <li>
              <Badge status="PENDING" /> <strong>{count(dispatch('PENDING'))}</strong>
            </li>
            <li>
              <Badge status="SENT" /> <strong>{count(dispatch('SENT'))}</strong>
            </li>
            <li className={dispatch('DEAD') > 0 ? 'attention' : undefined}>
              <Badge status="DEAD" /> <strong>{count(dispatch('DEAD'))}</strong>
            </li>
          </ul>
        </section>
        <section className="card" aria-labelledby="cleanup-title">
          <h2 id="cleanup-title">Cleanup due</h2>
          <p className="big">{count(summary?.cleanupDue ?? 0)}</p>
        </section>
        <Processes processes={processes} now={now} />
      </div>

      <section aria-labelledby="alerts-title">
        <h2 id="alerts-title">
          Alerts <span className="muted">({summary ? summary.alerts.length : '—'})</span>
        </h2>
        {summary && summary.alerts.length === 0 ? (
          <p className="muted">No alerts.</p>
        ) : (
          <div className="table-wrap" tabIndex={0} role="region" aria-labelledby="alerts-title">
            <table>
              <thead>
                <tr>
                  <th scope="col">Level</th>
                  <th scope="col">Kind</th>
                  <th scope="col">Job</th>
                  <th scope="col">Business key</th>
                  <th scope="col">Run</th>
                  <th scope="col">Status</th>
                  <th scope="col">Time</th>
                  <th scope="col">Message</th>
                  <th scope="col">Action</th>
                </tr>
              </thead>
              <tbody>
                {summary?.alerts.map((a) => (
                  <tr
                    key={`${a.kind}:${a.runId}:${a.dispatchId}:${a.partitionId}:${a.jobKey}:${a.businessKey}`}
                    className={a.severity === 'ERROR' ? 'row-error' : undefined}
                  >
                    <td>
                      <Badge status={a.severity} />
                    </td>
                    <td>{a.kind.replaceAll('_', ' ')}</td>
                    <td>{a.jobKey ?? '—'}</td>
                    <td>{a.businessKey ?? '—'}</td>
                    <td>
                      {a.runId ? (
                        <Link to={`/runs/${a.runId}`} aria-label={`Run ${a.runId}`}>
                          {shortId(a.runId)}
                        </Link>
                      ) : (
                        '—'
                      )}
                    </td>
                    <td>
                      <Badge status={a.status} />
                    </td>
                    <td>{formatTime(a.at)}</td>
                    <td className="message">{a.message ?? '—'}</td>
                    <td>
                      {a.kind === 'DISPATCH_DEAD' && a.dispatchId && (
                        <OperatorButton onClick={() => setAction({ kind: 'resend', alert: a })}>Resend…</OperatorButton>
                      )}
                      {a.kind === 'PUBLISH_UNKNOWN' && a.status === 'PUBLISH_UNKNOWN' && (
                        <OperatorButton onClick={() => setAction({ kind: 'resolve', alert: a })}>Resolve…</OperatorButton>
                      )}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </section>

      <Notifications calls={notifications} />

      <section aria-labelledby="runs-title">
        <h2 id="runs-title">Runs</h2>
        <RunsList titleId="runs-title" onLive={setRunsLive} />
      </section>

      {action?.kind === 'resend' && (
        <ConfirmDialog
          title="Resend dispatch"
          confirmLabel="Resend"
          onClose={() => setAction(null)}
          onConfirm={async () => {
            await api.request(RESEND_DISPATCH, { input: { runId: action.alert.runId, dispatchId: action.alert.dispatchId! } });
            announce(`Dispatch ${shortId(action.alert.dispatchId)} queued again.`);
          }}
        >
          <p>
            Queue dispatch <strong>{shortId(action.alert.dispatchId)}</strong> of run <strong>{shortId(action.alert.runId)}</strong> (
            {action.alert.jobKey} / {action.alert.businessKey}) for delivery again, with a fresh attempt budget?
          </p>
          {action.alert.message && <p className="muted">Last error: {action.alert.message}</p>}
        </ConfirmDialog>
      )}
      {action?.kind === 'resolve' && (
        <ResolveDialog
          runLabel={`${shortId(action.alert.runId)} (${action.alert.jobKey} / ${action.alert.businessKey})`}
          onClose={() => setAction(null)}
          onConfirm={async (resolution, reason) => {
            await api.request(RESOLVE_UNKNOWN, { input: { runId: action.alert.runId!, resolution, reason } });
            announce(`Run ${shortId(action.alert.runId)} resolved as ${resolution}.`);
          }}
        />
      )}
    </>
  );
}
