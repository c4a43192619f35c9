import { useEffect, useRef, useState } from 'react';
import { JOBS, RUNS_CHANGED, type JobSummary } from '../api/operations';
import { useLive, useQuery } from '../api/typed';
import { Badge } from '../components/Badge';
import { DurationTrend } from '../components/DurationTrend';
import { LiveIndicator } from '../components/Live';
import { type Column, Table } from '../components/Table';
import { formatTime } from '../format';
import { useNow, usePageTitle } from '../hooks';
import { Link, navigate, useLocation } from '../router';

const PAGE = 50;
/** The runs each job's trend and success rate cover. */
const RECENT_RUNS = 20;
/** Runs change many times a second under load: the page reads again at most this often. */
const RELOAD_EVERY_MS = 2000;

const rate = (job: JobSummary) => (job.successRate === null ? '—' : `${Math.round(job.successRate * 100)}%`);
const rateTitle = (job: JobSummary) => `SUCCESS among the ended runs of the last ${job.recentRuns.length} (active runs do not count)`;

function jobColumns(now: number): Array<Column<JobSummary>> {
  return [
    {
      header: 'Job',
      rowHeader: true,
      cell: (j) => <Link to={`/jobs/${encodeURIComponent(j.jobKey)}`}>{j.jobKey}</Link>,
    },
    {
      header: 'Last run',
      cell: (j) => (
        <Link to={`/runs/${j.lastRun.runId}`}>
          <Badge status={j.lastRun.status} /> {j.lastRun.businessKey}
        </Link>
      ),
    },
    { header: 'Started', cell: (j) => formatTime(j.lastRun.startedAt) },
    {
      header: 'Last success',
      cell: (j) =>
        j.lastSuccess ? (
          <Link to={`/runs/${j.lastSuccess.runId}`}>
            {j.lastSuccess.businessKey} · {formatTime(j.lastSuccess.completedAt)}
          </Link>
        ) : (
          <span className="muted">never</span>
        ),
    },
    { header: 'Duration trend', cell: (j) => <DurationTrend runs={j.recentRuns} now={now} /> },
    {
      header: 'Success rate',
      className: 'num',
      title: `Over the last ${RECENT_RUNS} runs`,
      cell: (j) => <span title={rateTitle(j)}>{rate(j)}</span>,
    },
    {
      header: 'Gate',
      cell: (j) => (j.gatedBy ? <Link to={`/gates/${encodeURIComponent(j.gatedBy)}`}>{j.gatedBy}</Link> : <span className="muted">—</span>),
    },
  ];
}

/** Every job: its last run and success, how long its runs take, how often they succeed; kept live. */
export function Jobs() {
  usePageTitle('Jobs');
  const now = useNow(5000);
  const { path, search } = useLocation();
  const params = new URLSearchParams(search);
  const contains = params.get('job') ?? '';
  const after = params.get('after') ?? '';
  const [draft, setDraft] = useState(contains);
  useEffect(() => setDraft(contains), [contains]);
  const { data, error, reload, current } = useQuery(JOBS, {
    first: PAGE,
    after: after || null,
    jobKeyContains: contains || null,
    recentRuns: RECENT_RUNS,
  });
  const jobs = data?.jobs.nodes ?? null;
  const next = data?.jobs.pageInfo.hasNextPage ? data.jobs.pageInfo.endCursor : null;

  const pending = useRef<ReturnType<typeof setTimeout> | null>(null);
  useEffect(() => () => void (pending.current && clearTimeout(pending.current)), []);
  const live = useLive(
    RUNS_CHANGED,
    { jobKey: null },
    {
      onData: () => {
        if (pending.current) return;
        pending.current = setTimeout(() => {
          pending.current = null;
          reload();
        }, RELOAD_EVERY_MS);
      },
      onConnected: (reconnected) => reconnected && reload(),
    },
  );
  const to = (q: { job?: string; after?: string }) => {
    const p = new URLSearchParams();
    if (q.job) p.set('job', q.job);
    if (q.after) p.set('after', q.after);
    const text = p.toString();
    return text ? `${path}?${text}` : path;
  };

  return (
    <>
      <div className="page-head">
        <h1 tabIndex={-1} id="jobs-title">
          Jobs
        </h1>
        <LiveIndicator state={live} />
      </div>
      <form
        className="filters"
        role="search"
        aria-label="Filter jobs"
        onSubmit={(e) => {
          e.preventDefault();
          navigate(to({ job: draft.trim() }));
        }}
      >
        <label>
          Job contains
          <input value={draft} onChange={(e) => setDraft(e.target.value)} maxLength={200} />
        </label>
        <button type="submit">Filter</button>
      </form>
      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}
      {jobs === null && !error && <p className="muted">Loading…</p>}
      {jobs && jobs.length === 0 && current && <p className="muted">{contains ? 'No job matches.' : 'No job has run yet.'}</p>}
      {jobs && jobs.length > 0 && (
        <div aria-busy={!current}>
          <Table
            labelledBy="jobs-title"
            className="jobs"
            regionClassName="jobs-table"
            rows={jobs}
            rowKey={(j) => j.jobKey}
            rowProps={(j) => ({ 'data-job': j.jobKey })}
            columns={jobColumns(now)}
          />
          <ul className="run-cards job-cards" aria-labelledby="jobs-title">
            {jobs.map((j) => (
              <li key={j.jobKey} className="run-card" data-job-card={j.jobKey}>
                <div className="run-card-head">
                  <Badge status={j.lastRun.status} />
                  <Link to={`/jobs/${encodeURIComponent(j.jobKey)}`}>{j.jobKey}</Link>
                  <DurationTrend runs={j.recentRuns} now={now} />
                </div>
                <p className="muted">
                  Last run <Link to={`/runs/${j.lastRun.runId}`}>{j.lastRun.businessKey}</Link> {formatTime(j.lastRun.startedAt)} · last
                  success {j.lastSuccess ? formatTime(j.lastSuccess.completedAt) : 'never'} · success rate {rate(j)}
                  {j.gatedBy && ` · gate ${j.gatedBy}`}
                </p>
              </li>
            ))}
          </ul>
        </div>
      )}
      <nav className="pager" aria-label="Pages of jobs">
        {after && (
          <Link to={to({ job: contains })} className="button">
            First page
          </Link>
        )}
        {next && (
          <Link to={to({ job: contains, after: next })} className="button">
            Next page
          </Link>
        )}
      </nav>
    </>
  );
}
