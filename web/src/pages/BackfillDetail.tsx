import { useState } from 'react';
import { CANCEL_BACKFILL, PAUSE_BACKFILL, RELEASE_BACKFILL_READINESS, RESUME_BACKFILL } from '../../../schema/documents/operator.js';
import { BACKFILL, type BackfillDetail as Detail, RUNS_CHANGED } from '../api/operations';
import { useApi, useLive, useQuery } from '../api/typed';
import { ReasonDialog } from '../components/ActionDialogs';
import { Badge } from '../components/Badge';
import { LiveIndicator } from '../components/Live';
import { type Column, Table } from '../components/Table';
import { formatTime } from '../format';
import { usePageTitle } from '../hooks';
import { operatorDenial, useIdentity } from '../identity';
import { Link } from '../router';
import { progressText } from './Backfills';

type BackfillDate = Detail['dates'][number];
type Action = Detail['allowedActions'][number];

type Api = ReturnType<typeof useApi>;
type ControlInput = { backfillId: string; reason: string };

const ACTIONS: Record<Action, { label: string; send(api: Api, input: ControlInput): Promise<unknown>; explain: string }> = {
  PAUSE: {
    label: 'Pause',
    send: (api, input) => api.request(PAUSE_BACKFILL, { input }),
    explain: 'No new date starts; the loads under way finish.',
  },
  RESUME: { label: 'Resume', send: (api, input) => api.request(RESUME_BACKFILL, { input }), explain: 'Its next dates start at once.' },
  CANCEL: {
    label: 'Cancel',
    send: (api, input) => api.request(CANCEL_BACKFILL, { input }),
    explain: 'The dates not started are cancelled with their calls to NiFi; the loads under way finish.',
  },
  RELEASE_READINESS: {
    label: 'Release readiness',
    send: (api, input) => api.request(RELEASE_BACKFILL_READINESS, { input }),
    explain: 'Each date’s current readiness decision is pushed once (its gate receiver and readinessChanged).',
  },
};

const DATE_COLUMNS: Array<Column<BackfillDate>> = [
  { header: '#', className: 'num', cell: (d) => d.position },
  { header: 'Business date', rowHeader: true, cell: (d) => d.businessDate },
  { header: 'Status', cell: (d) => <Badge status={d.status} /> },
  { header: 'Why', cell: (d) => d.reason?.replaceAll('_', ' ').toLowerCase() ?? '—' },
  { header: 'Run', cell: (d) => (d.runId ? <Link to={`/runs/${d.runId}`}>{d.runId.slice(0, 8)}</Link> : '—') },
  { header: 'Call to NiFi', cell: (d) => <Badge status={d.startDispatchStatus} /> },
  { header: 'Updated', cell: (d) => formatTime(d.updatedAt) },
];

function describe(b: Detail): string {
  const readiness = b.readinessHeld ? 'held until released' : b.pushReadiness ? 'pushed' : `released by ${b.readinessReleasedBy}`;
  const order = b.order.replaceAll('_', ' ').toLowerCase();
  return `${b.maxConcurrent} at most at once, ${order}, reprocess ${b.reprocess}; readiness ${readiness}. Started by ${b.createdBy}, ${formatTime(b.createdAt)}.`;
}

/** One backfill: its progress, each date, and the actions its state allows (for an operator). */
export function BackfillDetail({ backfillId }: { backfillId: string }) {
  const api = useApi();
  const operator = operatorDenial(useIdentity()) === null;
  const [moved, setMoved] = useState(0);
  const { data, error, reload } = useQuery(BACKFILL, { backfillId }, moved);
  const backfill = data?.backfill;
  const live = useLive(RUNS_CHANGED, backfill ? { jobKey: backfill.jobKey } : null, { onData: () => setMoved((n) => n + 1) });
  const [asking, setAsking] = useState<Action | null>(null);
  usePageTitle(backfill ? `Backfill of ${backfill.jobKey} ${backfill.from} – ${backfill.to}` : 'Backfill');
  if (error) {
    return (
      <p className="error" role="alert">
        {error}
      </p>
    );
  }
  if (data && !backfill) return <p role="alert">No backfill {backfillId}.</p>;
  if (!backfill) return <p className="muted">Loading…</p>;
  return (
    <>
      <nav aria-label="Breadcrumb" className="crumbs">
        <Link to="/backfills">Backfills</Link> › <span aria-current="page">{backfill.jobKey}</span>
      </nav>
      <div className="page-head">
        <h1 tabIndex={-1} id="backfill-title">
          Backfill of <Link to={`/jobs/${encodeURIComponent(backfill.jobKey)}`}>{backfill.jobKey}</Link>, {backfill.from} – {backfill.to}
        </h1>
        <LiveIndicator state={live} />
      </div>
      <p>
        <Badge status={backfill.status} /> <span data-testid="backfill-progress">{progressText(backfill)}</span>
      </p>
      <p className="muted">{describe(backfill)}</p>
      {operator && backfill.allowedActions.length > 0 && (
        <div className="actions">
          {backfill.allowedActions.map((action) => (
            <button key={action} type="button" onClick={() => setAsking(action)}>
              {ACTIONS[action].label}
            </button>
          ))}
        </div>
      )}
      <h2 id="backfill-dates">Dates</h2>
      <Table
        columns={DATE_COLUMNS}
        rows={backfill.dates}
        rowKey={(d) => d.businessDate}
        rowProps={(d) => ({ 'data-date': d.businessDate })}
        labelledBy="backfill-dates"
      />
      {asking && (
        <ReasonDialog
          title={`${ACTIONS[asking].label} backfill`}
          confirmLabel={ACTIONS[asking].label}
          onClose={() => setAsking(null)}
          onConfirm={async (reason) => {
            await ACTIONS[asking].send(api, { backfillId, reason });
            reload();
          }}
        >
          <p>{ACTIONS[asking].explain}</p>
        </ReasonDialog>
      )}
    </>
  );
}
