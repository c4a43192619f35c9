import { useId, useState, type FormEvent } from 'react';
import { START_BACKFILL } from '../../../schema/documents/operator.js';
import { describeError } from '../api/client';
import { BACKFILLS, type BackfillRow, PLAN_BACKFILL, type PlannedDate, RUNS_CHANGED } from '../api/operations';
import { useApi, useLive, useQuery } from '../api/typed';
import { Badge } from '../components/Badge';
import { LiveIndicator } from '../components/Live';
import { type Column, Table } from '../components/Table';
import { formatTime } from '../format';
import { usePageTitle } from '../hooks';
import { operatorDenial, useIdentity } from '../identity';
import { Link, navigate, useLocation } from '../router';

const REPROCESS = ['MISSING', 'FAILED', 'ALL'] as const;
const ORDERS = ['OLDEST_FIRST', 'NEWEST_FIRST'] as const;

export const progressText = (b: Pick<BackfillRow, 'progress'>) => {
  const p = b.progress;
  return `${p.succeeded} succeeded, ${p.running} running, ${p.queued} queued, ${p.failed} failed, ${p.skipped} skipped of ${p.total}`;
};

const BACKFILL_COLUMNS: Array<Column<BackfillRow>> = [
  {
    header: 'Backfill',
    rowHeader: true,
    cell: (b) => <Link to={`/backfills/${b.backfillId}`}>{`${b.jobKey} ${b.from} – ${b.to}`}</Link>,
  },
  { header: 'Status', cell: (b) => <Badge status={b.status} /> },
  { header: 'Progress', cell: progressText },
  { header: 'At once', className: 'num', cell: (b) => b.maxConcurrent },
  { header: 'Readiness', cell: (b) => (b.readinessHeld ? 'held' : b.pushReadiness ? 'pushed' : 'released') },
  { header: 'Started by', cell: (b) => `${b.createdBy}, ${formatTime(b.createdAt)}` },
];

const PLAN_COLUMNS: Array<Column<PlannedDate>> = [
  { header: '#', className: 'num', cell: (p) => p.position },
  { header: 'Business date', rowHeader: true, cell: (p) => p.businessDate },
  { header: 'Would', cell: (p) => <Badge status={p.action === 'START' ? 'QUEUED' : 'SKIPPED'} label={p.action.toLowerCase()} /> },
  { header: 'Because', cell: (p) => p.reason.replaceAll('_', ' ').toLowerCase() },
  { header: 'Latest run', cell: (p) => (p.latestRunId ? <Link to={`/runs/${p.latestRunId}`}>{p.latestRunStatus}</Link> : '—') },
];

interface Range {
  jobKey: string;
  from: string;
  to: string;
  reprocess: (typeof REPROCESS)[number];
  order: (typeof ORDERS)[number];
  maxConcurrent: number;
  pushReadiness: boolean;
}

/** Plan, then start: the dry run is shown first and the start sends exactly what was planned. */
function StartBackfillForm({ jobKey, onStarted }: { jobKey: string; onStarted(backfillId: string): void }) {
  const api = useApi();
  const id = useId();
  const [range, setRange] = useState<Range>({
    jobKey,
    from: '',
    to: '',
    reprocess: 'MISSING',
    order: 'OLDEST_FIRST',
    maxConcurrent: 2,
    pushReadiness: true,
  });
  const [planned, setPlanned] = useState<{ range: Range; dates: PlannedDate[] } | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const set = <K extends keyof Range>(key: K, value: Range[K]) => {
    setRange((r) => ({ ...r, [key]: value }));
    setPlanned(null);
  };
  const plan = async (event: FormEvent) => {
    event.preventDefault();
    setError(null);
    try {
      const { jobKey: job, from, to, reprocess, order } = range;
      const answer = await api.request(PLAN_BACKFILL, { jobKey: job, from, to, reprocess, order });
      setPlanned({ range, dates: answer.planBackfill });
    } catch (e) {
      setError(describeError(e));
    }
  };
  const start = async () => {
    if (!planned || busy) return;
    setBusy(true);
    setError(null);
    try {
      const answer = await api.request(START_BACKFILL, { input: planned.range });
      onStarted(answer.startBackfill!.backfill.backfillId);
    } catch (e) {
      setError(describeError(e));
      setBusy(false);
    }
  };
  const starting = planned?.dates.filter((d) => d.action === 'START').length ?? 0;
  return (
    <section aria-labelledby={`${id}-title`}>
      <h2 id={`${id}-title`}>New backfill</h2>
      <form onSubmit={plan} className="form-grid">
        <label htmlFor={`${id}-job`}>Job</label>
        <input id={`${id}-job`} required value={range.jobKey} onChange={(e) => set('jobKey', e.target.value.toUpperCase())} />
        <label htmlFor={`${id}-from`}>From</label>
        <input id={`${id}-from`} type="date" required value={range.from} onChange={(e) => set('from', e.target.value)} />
        <label htmlFor={`${id}-to`}>To</label>
        <input id={`${id}-to`} type="date" required value={range.to} onChange={(e) => set('to', e.target.value)} />
        <label htmlFor={`${id}-reprocess`}>Reprocess</label>
        <select id={`${id}-reprocess`} value={range.reprocess} onChange={(e) => set('reprocess', e.target.value as Range['reprocess'])}>
          {REPROCESS.map((r) => (
            <option key={r}>{r}</option>
          ))}
        </select>
        <label htmlFor={`${id}-order`}>Order</label>
        <select id={`${id}-order`} value={range.order} onChange={(e) => set('order', e.target.value as Range['order'])}>
          {ORDERS.map((o) => (
            <option key={o}>{o}</option>
          ))}
        </select>
        <label htmlFor={`${id}-max`}>At most at once</label>
        <input
          id={`${id}-max`}
          type="number"
          min={1}
          max={100}
          value={range.maxConcurrent}
          onChange={(e) => set('maxConcurrent', Number(e.target.value))}
        />
        <label htmlFor={`${id}-push`}>
          <input id={`${id}-push`} type="checkbox" checked={range.pushReadiness} onChange={(e) => set('pushReadiness', e.target.checked)} />{' '}
          Push readiness as the dates finish (else hold it until released)
        </label>
        <div className="actions">
          <button type="submit">Plan</button>
        </div>
      </form>
      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}
      {planned && (
        <>
          <h3 id={`${id}-plan`}>
            Dry run: {starting} of {planned.dates.length} dates would start
          </h3>
          <Table columns={PLAN_COLUMNS} rows={planned.dates} rowKey={(p) => p.businessDate} labelledBy={`${id}-plan`} />
          <button
            type="button"
            className="danger"
            aria-disabled={busy || starting === 0}
            disabled={starting === 0}
            onClick={() => void start()}
          >
            {busy ? 'Starting…' : `Start backfill of ${starting} dates`}
          </button>
        </>
      )}
    </section>
  );
}

/** Backfills, newest first (of one job with ?job=), and, for an operator, the plan → start form. */
export function Backfills() {
  const { search } = useLocation();
  const jobKey = new URLSearchParams(search).get('job');
  usePageTitle(jobKey ? `Backfills of ${jobKey}` : 'Backfills');
  const operator = operatorDenial(useIdentity()) === null;
  const [moved, setMoved] = useState(0);
  const { data, error } = useQuery(BACKFILLS, { jobKey, openOnly: false }, moved);
  const live = useLive(RUNS_CHANGED, { jobKey }, { onData: () => setMoved((n) => n + 1) });
  return (
    <>
      <div className="page-head">
        <h1 tabIndex={-1} id="backfills-title">
          {jobKey ? `Backfills of ${jobKey}` : 'Backfills'}
        </h1>
        <LiveIndicator state={live} />
      </div>
      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}
      {data && data.backfills.length > 0 && (
        <Table
          columns={BACKFILL_COLUMNS}
          rows={data.backfills}
          rowKey={(b) => b.backfillId}
          rowProps={(b) => ({ 'data-backfill': b.backfillId })}
          labelledBy="backfills-title"
        />
      )}
      {data && data.backfills.length === 0 && <p className="muted">No backfill yet.</p>}
      {operator && <StartBackfillForm jobKey={jobKey ?? ''} onStarted={(backfillId) => navigate(`/backfills/${backfillId}`)} />}
    </>
  );
}
