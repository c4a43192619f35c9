import { useState } from 'react';
import {
  ALERT_WEBHOOK_CALLS,
  type AlertWebhookCall,
  MONITOR_SUMMARY,
  MONITOR_SUMMARY_CHANGED,
  PROCESSES,
  type ProcessInstance,
  type StatusCount,
} from '../api/operations';
import { ACKNOWLEDGE_ALERT_GROUP, RESEND_DISPATCH, RESOLVE_UNKNOWN, SNOOZE_ALERT_GROUP } from '../../../schema/documents/operator.js';
import { groupTitle } from '../alert-groups';
import { useApi, useLive, useQuery } from '../api/typed';
import { ReasonDialog, ResolveDialog, SnoozeDialog } from '../components/ActionDialogs';
import { type AlertGroupAction, AlertGroups } from '../components/AlertGroups';
import { Badge } from '../components/Badge';
import { LiveIndicator, useAnnounce } from '../components/Live';
import { RunsList } from '../components/RunsList';
import { SourcePools } from '../components/SourcePools';
import { type Column, Table } from '../components/Table';
import { count, elapsed, formatTime, shortId } from '../format';
import { type LiveState, useNow, usePageTitle, worst } from '../hooks';
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
              <Link to={`/?status=${c.status}`} className="count-link" title={`List the ${c.status.replaceAll('_', ' ')} runs`}>
                <Badge status={c.status} /> <strong>{count(c.count)}</strong>
              </Link>
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

/** A run's short id linked to its page, or a dash. */
const runLink = (runId: string | null | undefined) =>
  runId ? (
    <Link to={`/runs/${runId}`} aria-label={`Run ${runId}`}>
      {shortId(runId)}
    </Link>
  ) : (
    '—'
  );

const NOTIFICATION_COLUMNS: Array<Column<AlertWebhookCall>> = [
  { header: 'Delivery', cell: (c) => <Badge status={c.status} /> },
  { header: 'Receiver', cell: (c) => c.receiver },
  { header: 'Kind', cell: (c) => c.occurrence.kind.replaceAll('_', ' ') },
  { header: 'Run', cell: (c) => runLink(c.occurrence.runId) },
  { header: 'Attempts', cell: (c) => c.attemptCount },
  { header: 'HTTP', cell: (c) => c.lastHttpStatus ?? '—' },
  { header: 'Queued', cell: (c) => formatTime(c.createdAt) },
  { header: 'Last error', className: 'message', cell: (c) => c.lastError ?? '—' },
];

/** The latest alert notifications (alerts.webhooks): to which receiver, about what, and how the delivery went. */
function Notifications({ calls }: { calls: AlertWebhookCall[] | null }) {
  if (!calls || calls.length === 0) return null;
  return (
    <section aria-labelledby="notifications-title">
      <h2 id="notifications-title">Notifications</h2>
      <Table
        labelledBy="notifications-title"
        rows={calls}
        rowKey={(c) => c.dispatchId}
        rowProps={(c) => ({ className: c.status === 'DEAD' ? 'row-error' : undefined })}
        columns={NOTIFICATION_COLUMNS}
        cards
      />
    </section>
  );
}

export function Dashboard() {
  usePageTitle('Dashboard');
  const api = useApi();
  const announce = useAnnounce();
  const now = useNow();
  const summaryQuery = useQuery(MONITOR_SUMMARY, {});
  const summary = summaryQuery.data?.monitorSummary ?? null;
  // the summary is pushed when it changes and at least every 15 s: the processes are read again with it
  const processesQuery = useQuery(PROCESSES, summary && {}, summary);
  const notificationsQuery = useQuery(ALERT_WEBHOOK_CALLS, summary && { last: NOTIFICATIONS_SHOWN }, summary);
  const processes = processesQuery.data?.processes ?? null;
  const notifications = notificationsQuery.data?.alertWebhookCalls ?? null;
  const error = summaryQuery.error ?? processesQuery.error ?? notificationsQuery.error;
  const [action, setAction] = useState<AlertGroupAction | null>(null);
  const [runsLive, setRunsLive] = useState<LiveState>('connecting');

  const summaryLive = useLive(
    MONITOR_SUMMARY_CHANGED,
    {},
    {
      onData: (d) => d.monitorSummaryChanged && summaryQuery.setData({ monitorSummary: d.monitorSummaryChanged }),
      onConnected: (reconnected) => reconnected && summaryQuery.reload(),
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

      <AlertGroups groups={summary?.alertGroups ?? null} alertCount={summary ? summary.alerts.length : null} act={setAction} />

      <Notifications calls={notifications} />

      <SourcePools />
      <section aria-labelledby="runs-title">
        <h2 id="runs-title">Runs</h2>
        <RunsList titleId="runs-title" onLive={setRunsLive} />
      </section>

      {action?.kind === 'acknowledge' && (
        <ReasonDialog
          title="Acknowledge alert group"
          confirmLabel="Acknowledge"
          label="Note (recorded in the event log)"
          onClose={() => setAction(null)}
          onConfirm={async (note) => {
            await api.request(ACKNOWLEDGE_ALERT_GROUP, { input: { groupKey: action.group.groupKey, note } });
            announce(`${groupTitle(action.group)} acknowledged.`);
          }}
        >
          <p>
            Acknowledge the {action.group.count} alert{action.group.count === 1 ? '' : 's'} of <strong>{groupTitle(action.group)}</strong>{' '}
            present now. An alert of this group raised later raises it again.
          </p>
        </ReasonDialog>
      )}
      {action?.kind === 'snooze' && (
        <SnoozeDialog
          groupLabel={groupTitle(action.group)}
          onClose={() => setAction(null)}
          onConfirm={async (until, note) => {
            await api.request(SNOOZE_ALERT_GROUP, { input: { groupKey: action.group.groupKey, until: until.toISOString(), note } });
            announce(`${groupTitle(action.group)} snoozed until ${formatTime(until.toISOString())}.`);
          }}
        />
      )}
      {action?.kind === 'resend' && (
        <ReasonDialog
          title="Resend dispatch"
          confirmLabel="Resend"
          onClose={() => setAction(null)}
          onConfirm={async (reason) => {
            await api.request(RESEND_DISPATCH, { input: { runId: action.alert.runId, dispatchId: action.alert.dispatchId!, reason } });
            announce(`Dispatch ${shortId(action.alert.dispatchId)} queued again.`);
          }}
        >
          <p>
            Queue dispatch <strong>{shortId(action.alert.dispatchId)}</strong>
            {action.alert.runId && (
              <>
                {' '}
                of run <strong>{shortId(action.alert.runId)}</strong> ({action.alert.jobKey} / {action.alert.businessKey})
              </>
            )}{' '}
            for delivery again, with a fresh attempt budget?
          </p>
          {action.alert.message && <p className="muted">Last error: {action.alert.message}</p>}
        </ReasonDialog>
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
