import { useCallback, useEffect, useId, useState } from 'react';
import { describeError } from '../api/client';
import {
  ALERT_WEBHOOK_CALLS,
  MONITOR_SUMMARY,
  MONITOR_SUMMARY_CHANGED,
  PROCESSES,
  RESEND_DISPATCH,
  RESOLVE_UNKNOWN,
  RUNS,
  RUNS_CHANGED,
} from '../api/operations';
import type { Alert, AlertWebhookCall, MonitorSummary, ProcessInstance, RunRow, StatusCount } from '../api/types';
import { ConfirmDialog, ResolveDialog } from '../components/ActionDialogs';
import { Badge } from '../components/Badge';
import { LiveIndicator, useAnnounce } from '../components/Live';
import { count, elapsed, formatTime, shortId } from '../format';
import { useNow, useSubscription, worst } from '../hooks';
import { Link } from '../router';
import { useSession } from '../session';
import { RUN_STATUSES, isActive } from '../states';

interface Filter {
  jobKey: string;
  businessKey: string;
  status: string;
  activeOnly: boolean;
}

const PAGE = 50;

function matches(run: RunRow, filter: Filter): boolean {
  if (filter.jobKey && run.jobKey !== filter.jobKey) return false;
  if (filter.businessKey && run.businessKey !== filter.businessKey) return false;
  if (filter.status && run.status !== filter.status) return false;
  return !filter.activeOnly || isActive(run.status);
}

const sameFilter = (a: Filter, b: Filter) =>
  a.jobKey === b.jobKey && a.businessKey === b.businessKey && a.status === b.status && a.activeOnly === b.activeOnly;

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
  const session = useSession();
  const announce = useAnnounce();
  const now = useNow();
  const [summary, setSummary] = useState<MonitorSummary | null>(null);
  const [processes, setProcesses] = useState<ProcessInstance[] | null>(null);
  const [notifications, setNotifications] = useState<AlertWebhookCall[] | null>(null);
  const [runs, setRuns] = useState<RunRow[]>([]);
  const [cursor, setCursor] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [filter, setFilter] = useState<Filter>({ jobKey: '', businessKey: '', status: '', activeOnly: false });
  const [applied, setApplied] = useState<Filter>(filter);
  const [action, setAction] = useState<Action | null>(null);
  const ids = { job: useId(), bk: useId(), status: useId(), active: useId() };

  const loadSummary = useCallback(() => {
    session
      .request<{ monitorSummary: MonitorSummary }>(MONITOR_SUMMARY)
      .then((d) => setSummary(d.monitorSummary))
      .catch((e) => setError(describeError(e)));
  }, [session]);

  const loadRuns = useCallback(
    (after: string | null) => {
      const variables = {
        first: PAGE,
        after,
        filter: {
          jobKey: applied.jobKey || null,
          businessKey: applied.businessKey || null,
          status: applied.status || null,
          activeOnly: applied.activeOnly || null,
        },
      };
      session
        .request<{ runs: { nodes: RunRow[]; pageInfo: { hasNextPage: boolean; endCursor: string | null } } }>(RUNS, variables)
        .then((d) => {
          setError(null);
          setRuns((old) => (after ? [...old, ...d.runs.nodes] : d.runs.nodes));
          setCursor(d.runs.pageInfo.hasNextPage ? d.runs.pageInfo.endCursor : null);
        })
        .catch((e) => setError(describeError(e)));
    },
    [session, applied],
  );

  useEffect(() => loadSummary(), [loadSummary]);
  // the summary is pushed when it changes and at least every 15 s: the processes are read again with it
  useEffect(() => {
    if (!summary) return;
    session
      .request<{ processes: ProcessInstance[] }>(PROCESSES)
      .then((d) => setProcesses(d.processes))
      .catch((e) => setError(describeError(e)));
    session
      .request<{ alertWebhookCalls: AlertWebhookCall[] }>(ALERT_WEBHOOK_CALLS, { last: NOTIFICATIONS_SHOWN })
      .then((d) => setNotifications(d.alertWebhookCalls))
      .catch((e) => setError(describeError(e)));
  }, [session, summary]);
  useEffect(() => loadRuns(null), [loadRuns]);

  // text filters apply once typing pauses; the status and active-only filters at once
  useEffect(() => {
    const timer = setTimeout(() => setApplied((old) => (sameFilter(old, filter) ? old : filter)), 300);
    return () => clearTimeout(timer);
  }, [filter]);

  const summaryLive = useSubscription<{ monitorSummaryChanged: MonitorSummary }>(
    MONITOR_SUMMARY_CHANGED,
    {},
    {
      onData: (d) => setSummary(d.monitorSummaryChanged),
      onConnected: (reconnected) => reconnected && loadSummary(),
    },
  );

  const runsLive = useSubscription<{ runChanged: RunRow }>(
    RUNS_CHANGED,
    { jobKey: applied.jobKey || null },
    {
      onData: ({ runChanged: run }) =>
        setRuns((old) => {
          const rest = old.filter((r) => r.runId !== run.runId);
          if (!matches(run, applied)) return rest.length === old.length ? old : rest;
          if (rest.length === old.length) return [run, ...old].sort((a, b) => b.startedAt.localeCompare(a.startedAt));
          return old.map((r) => (r.runId === run.runId ? run : r));
        }),
      onConnected: (reconnected) => reconnected && loadRuns(null),
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

      <div className="cards">
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
          Alerts <span className="muted">({summary?.alerts.length ?? 0})</span>
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
                    <td className="message">{a.message ? a.message.slice(0, 80) : '—'}</td>
                    <td>
                      {a.kind === 'DISPATCH_DEAD' && a.dispatchId && (
                        <button type="button" onClick={() => setAction({ kind: 'resend', alert: a })}>
                          Resend…
                        </button>
                      )}
                      {a.kind === 'PUBLISH_UNKNOWN' && a.status === 'PUBLISH_UNKNOWN' && (
                        <button type="button" onClick={() => setAction({ kind: 'resolve', alert: a })}>
                          Resolve…
                        </button>
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
        <form
          className="filters"
          role="search"
          aria-label="Filter runs"
          onSubmit={(e) => {
            e.preventDefault();
            setApplied(filter);
          }}
        >
          <div>
            <label htmlFor={ids.job}>Job</label>
            <input
              id={ids.job}
              value={filter.jobKey}
              placeholder="JOB_KEY"
              spellCheck={false}
              onChange={(e) => setFilter({ ...filter, jobKey: e.target.value.toUpperCase() })}
            />
          </div>
          <div>
            <label htmlFor={ids.bk}>Business key</label>
            <input
              id={ids.bk}
              value={filter.businessKey}
              spellCheck={false}
              onChange={(e) => setFilter({ ...filter, businessKey: e.target.value })}
            />
          </div>
          <div>
            <label htmlFor={ids.status}>Status</label>
            <select
              id={ids.status}
              value={filter.status}
              onChange={(e) => {
                const f = { ...filter, status: e.target.value };
                setFilter(f);
                setApplied(f);
              }}
            >
              <option value="">Any</option>
              {RUN_STATUSES.map((s) => (
                <option key={s} value={s}>
                  {s}
                </option>
              ))}
            </select>
          </div>
          <div className="check">
            <input
              id={ids.active}
              type="checkbox"
              checked={filter.activeOnly}
              onChange={(e) => {
                const f = { ...filter, activeOnly: e.target.checked };
                setFilter(f);
                setApplied(f);
              }}
            />
            <label htmlFor={ids.active}>Active only</label>
          </div>
        </form>
        <div className="table-wrap" tabIndex={0} role="region" aria-labelledby="runs-title">
          <table className="runs">
            <thead>
              <tr>
                <th scope="col">Run</th>
                <th scope="col">Job</th>
                <th scope="col">Business key</th>
                <th scope="col">Status</th>
                <th scope="col" title="succeeded / failed / expected">
                  Partitions
                </th>
                <th scope="col">Source</th>
                <th scope="col">Extracted</th>
                <th scope="col">Staging</th>
                <th scope="col">Target</th>
                <th scope="col">Started</th>
                <th scope="col">Elapsed</th>
                <th scope="col">Error</th>
              </tr>
            </thead>
            <tbody>
              {runs.length === 0 && (
                <tr>
                  <td colSpan={12} className="muted">
                    No runs match.
                  </td>
                </tr>
              )}
              {runs.map((r) => (
                <tr key={r.runId} data-run={r.runId}>
                  <td>
                    <Link to={`/runs/${r.runId}`} aria-label={`Run ${r.runId}`}>
                      {shortId(r.runId)}
                    </Link>
                  </td>
                  <td>{r.jobKey}</td>
                  <td>{r.businessKey}</td>
                  <td>
                    <Badge status={r.status} />
                  </td>
                  <td>
                    {r.successPartitionCount}/{r.failedPartitionCount}/{r.expectedPartitionCount ?? '—'}
                  </td>
                  <td className="num">{count(r.sourceCount)}</td>
                  <td className="num">{count(r.extractedCount)}</td>
                  <td className="num">{count(r.stagingCount)}</td>
                  <td className="num">{count(r.targetCount)}</td>
                  <td>{formatTime(r.startedAt)}</td>
                  <td>{elapsed(r.startedAt, r.completedAt, now)}</td>
                  <td>{r.errorCode ?? ''}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
        {cursor && (
          <button type="button" onClick={() => loadRuns(cursor)}>
            Load more runs
          </button>
        )}
      </section>

      {action?.kind === 'resend' && (
        <ConfirmDialog
          title="Resend dispatch"
          confirmLabel="Resend"
          onClose={() => setAction(null)}
          onConfirm={async () => {
            await session.request(RESEND_DISPATCH, { input: { runId: action.alert.runId, dispatchId: action.alert.dispatchId } });
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
            await session.request(RESOLVE_UNKNOWN, { input: { runId: action.alert.runId, resolution, reason } });
            announce(`Run ${shortId(action.alert.runId)} resolved as ${resolution}.`);
          }}
        />
      )}
    </>
  );
}
