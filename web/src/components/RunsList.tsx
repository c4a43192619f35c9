import { useCallback, useEffect, useId, useRef, useState } from 'react';
import { RUN_ID_PREFIX, idDigits } from '../../../src/domain/runs/run-id-prefix.js';
import { RUNS, RUNS_CHANGED, type RunRow } from '../api/operations';
import { useLive, useQuery } from '../api/typed';
import { count, dayStart, elapsed, formatTime, shortId } from '../format';
import { type LiveState, useNow } from '../hooks';
import { Link, navigate, useLocation } from '../router';
import { RUN_STATUSES, isActive } from '../states';
import { Badge } from './Badge';
import { type Column, Table } from './Table';

const PAGE = 50;

/** The list's filters, as the URL's query string holds them. */
interface Filter {
  job: string;
  key: string;
  /** The first digits of a run id, as the console shows them. */
  id: string;
  /** Tags the runs must carry, written key=value[,key=value…] as the API takes them. */
  tags: string;
  status: string;
  from: string;
  to: string;
  oldest: boolean;
  active: boolean;
  after: string;
}

function readFilter(search: string): Filter {
  const q = new URLSearchParams(search);
  const status = q.get('status') ?? '';
  return {
    job: q.get('job') ?? '',
    key: q.get('key') ?? '',
    id: q.get('id') ?? '',
    tags: q.get('tags') ?? '',
    status: (RUN_STATUSES as readonly string[]).includes(status) ? status : '',
    from: /^\d{4}-\d{2}-\d{2}$/.test(q.get('from') ?? '') ? q.get('from')! : '',
    to: /^\d{4}-\d{2}-\d{2}$/.test(q.get('to') ?? '') ? q.get('to')! : '',
    oldest: q.get('order') === 'oldest',
    active: q.get('active') === '1',
    after: q.get('after') ?? '',
  };
}

function writeFilter(f: Filter): string {
  const q = new URLSearchParams();
  if (f.job) q.set('job', f.job);
  if (f.key) q.set('key', f.key);
  if (f.id) q.set('id', f.id);
  if (f.tags) q.set('tags', f.tags);
  if (f.status) q.set('status', f.status);
  if (f.from) q.set('from', f.from);
  if (f.to) q.set('to', f.to);
  if (f.oldest) q.set('order', 'oldest');
  if (f.active) q.set('active', '1');
  if (f.after) q.set('after', f.after);
  const text = q.toString();
  return text ? `?${text}` : '';
}

function matches(run: RunRow, f: Filter, jobKey: string | undefined): boolean {
  const contains = (text: string, part: string) => text.toLowerCase().includes(part.toLowerCase());
  if (jobKey && run.jobKey !== jobKey) return false;
  if (f.job && !contains(run.jobKey, f.job)) return false;
  if (f.key && !contains(run.businessKey, f.key)) return false;
  if (RUN_ID_PREFIX.test(f.id) && !idDigits(run.runId).startsWith(idDigits(f.id))) return false;
  if (f.status && run.status !== f.status) return false;
  const carried = new Set(run.tags.map((tag) => `${tag.key}=${tag.value}`));
  if (f.tags && !f.tags.split(',').every((tag) => !tag.trim() || carried.has(tag.trim()))) return false;
  if (f.from && run.startedAt < dayStart(f.from)) return false;
  if (f.to && run.startedAt >= dayStart(f.to, true)) return false;
  return !f.active || isActive(run.status);
}

function runsVariables(f: Filter, jobKey: string | undefined) {
  return {
    first: PAGE,
    after: f.after || null,
    order: f.oldest ? ('OLDEST_FIRST' as const) : ('NEWEST_FIRST' as const),
    filter: {
      jobKey: jobKey ?? null,
      jobKeyContains: f.job || null,
      businessKeyContains: f.key || null,
      status: (f.status || null) as RunRow['status'] | null,
      activeOnly: f.active || null,
      startedFrom: f.from ? dayStart(f.from) : null,
      startedBefore: f.to ? dayStart(f.to, true) : null,
      runIdPrefix: RUN_ID_PREFIX.test(f.id) ? f.id : null,
      tags: f.tags || null,
    },
  };
}

/** The page shown, after `run` changed: updated, dropped when it no longer matches, or added when it is new. */
function changedPage(page: RunRow[], run: RunRow, f: Filter, jobKey: string | undefined): RunRow[] {
  const known = page.some((r) => r.runId === run.runId);
  if (!matches(run, f, jobKey)) return known ? page.filter((r) => r.runId !== run.runId) : page;
  if (known) return page.map((r) => (r.runId === run.runId ? run : r));
  // a new run belongs on the first page of the newest-first order only
  if (f.after || f.oldest) return page;
  return [run, ...page].sort((a, b) => b.startedAt.localeCompare(a.startedAt)).slice(0, PAGE);
}

function runColumns(jobKey: string | undefined, now: number): Array<Column<RunRow>> {
  return [
    { header: 'Status', cell: (r) => <Badge status={r.status} /> },
    { header: 'Job', cell: (r) => (jobKey ? r.jobKey : <Link to={`/jobs/${encodeURIComponent(r.jobKey)}`}>{r.jobKey}</Link>) },
    { header: 'Business key', cell: (r) => r.businessKey },
    {
      header: 'Run',
      cell: (r) => (
        <Link to={`/runs/${r.runId}`} aria-label={`Run ${r.runId}`}>
          {shortId(r.runId)}
        </Link>
      ),
    },
    {
      header: 'Partitions',
      title: 'succeeded / failed / expected',
      cell: (r) => `${r.successPartitionCount}/${r.failedPartitionCount}/${r.expectedPartitionCount ?? '—'}`,
    },
    { header: 'Source', className: 'num', cell: (r) => count(r.sourceCount) },
    { header: 'Extracted', className: 'num', cell: (r) => count(r.extractedCount) },
    { header: 'Staging', className: 'num', cell: (r) => count(r.stagingCount) },
    { header: 'Target', className: 'num', cell: (r) => count(r.targetCount) },
    { header: 'Started', cell: (r) => formatTime(r.startedAt) },
    { header: 'Elapsed', cell: (r) => elapsed(r.startedAt, r.completedAt, now) },
    { header: 'Error', cell: (r) => r.errorCode ?? '' },
  ];
}

/**
 * Runs, newest (or oldest) first, a page at a time: substring search on job and business key, status, active only and a
 * start date range. Every filter and the page live in the URL. With `jobKey`: that job's runs only (its history).
 */
export function RunsList({ jobKey, titleId, onLive }: { jobKey?: string; titleId: string; onLive(state: LiveState): void }) {
  const now = useNow();
  const { path, search } = useLocation();
  const applied = readFilter(search);
  const appliedKey = writeFilter(applied);
  const [draft, setDraft] = useState({ job: applied.job, key: applied.key, id: applied.id, tags: applied.tags });
  const ids = {
    job: useId(),
    key: useId(),
    id: useId(),
    idHint: useId(),
    tags: useId(),
    tagsHint: useId(),
    status: useId(),
    from: useId(),
    to: useId(),
    order: useId(),
    active: useId(),
  };

  const typed = useRef(draft);
  typed.current = draft;
  const apply = useCallback(
    (change: Partial<Filter>, replace = false) => {
      // a new filter starts again at the first page, and takes the text typed so far with it
      const text = {
        job: typed.current.job.trim(),
        key: typed.current.key.trim(),
        id: typed.current.id.trim(),
        tags: typed.current.tags.trim(),
      };
      navigate(`${path}${writeFilter({ ...readFilter(location.search), after: '', ...text, ...change })}`, { replace });
    },
    [path],
  );

  // typing changes the URL once it pauses (replacing the entry: back goes to the previous search, not each letter)
  useEffect(() => {
    const timer = setTimeout(() => {
      const f = readFilter(location.search);
      if (draft.job.trim() !== f.job || draft.key.trim() !== f.key || draft.id.trim() !== f.id || draft.tags.trim() !== f.tags)
        apply({}, true);
    }, 300);
    return () => clearTimeout(timer);
  }, [draft, apply]);

  // back and forward change the URL: the fields follow it
  useEffect(() => {
    const f = readFilter(appliedKey);
    setDraft((d) =>
      d.job.trim() === f.job && d.key.trim() === f.key && d.id.trim() === f.id && d.tags.trim() === f.tags
        ? d
        : { job: f.job, key: f.key, id: f.id, tags: f.tags },
    );
  }, [appliedKey]);

  const { data, error, reload, setData, current } = useQuery(RUNS, runsVariables(applied, jobKey));
  const runs = data && (data.runs?.nodes ?? []);
  const next = data?.runs?.pageInfo.hasNextPage ? data.runs.pageInfo.endCursor : null;

  const live = useLive(
    RUNS_CHANGED,
    { jobKey: jobKey ?? null },
    {
      onData: ({ runChanged: run }) => {
        if (!run) return;
        const f = readFilter(appliedKey);
        setData((answer) => (answer?.runs ? { runs: { ...answer.runs, nodes: changedPage(answer.runs.nodes, run, f, jobKey) } } : answer));
      },
      onConnected: (reconnected) => reconnected && reload(),
    },
  );
  useEffect(() => onLive(live), [live, onLive]);

  return (
    <>
      <form
        className="filters"
        role="search"
        aria-label="Filter runs"
        onSubmit={(e) => {
          e.preventDefault();
          apply({});
        }}
      >
        {!jobKey && (
          <div>
            <label htmlFor={ids.job}>Job contains</label>
            <input
              id={ids.job}
              type="search"
              value={draft.job}
              spellCheck={false}
              onChange={(e) => setDraft({ ...draft, job: e.target.value })}
            />
          </div>
        )}
        <div>
          <label htmlFor={ids.key}>Business key contains</label>
          <input
            id={ids.key}
            type="search"
            value={draft.key}
            spellCheck={false}
            onChange={(e) => setDraft({ ...draft, key: e.target.value })}
          />
        </div>
        <div>
          <label htmlFor={ids.id}>Run id starts with</label>
          <input
            id={ids.id}
            type="search"
            value={draft.id}
            spellCheck={false}
            autoComplete="off"
            aria-describedby={draft.id.trim() && !RUN_ID_PREFIX.test(draft.id.trim()) ? ids.idHint : undefined}
            onChange={(e) => setDraft({ ...draft, id: e.target.value })}
          />
          {draft.id.trim() && !RUN_ID_PREFIX.test(draft.id.trim()) && (
            <p id={ids.idHint} className="hint">
              At least 4 hexadecimal digits of the id.
            </p>
          )}
        </div>
        <div>
          <label htmlFor={ids.tags}>Tags</label>
          <input
            id={ids.tags}
            type="search"
            value={draft.tags}
            spellCheck={false}
            autoComplete="off"
            placeholder="team=finance"
            aria-describedby={ids.tagsHint}
            onChange={(e) => setDraft({ ...draft, tags: e.target.value })}
          />
          <p id={ids.tagsHint} className="hint">
            key=value, several separated by commas: runs carrying all of them.
          </p>
        </div>
        <div>
          <label htmlFor={ids.status}>Status</label>
          <select id={ids.status} value={applied.status} onChange={(e) => apply({ status: e.target.value })}>
            <option value="">Any</option>
            {RUN_STATUSES.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </div>
        <div>
          <label htmlFor={ids.from}>Started from</label>
          <input
            id={ids.from}
            type="date"
            value={applied.from}
            max={applied.to || undefined}
            onChange={(e) => apply({ from: e.target.value })}
          />
        </div>
        <div>
          <label htmlFor={ids.to}>Started until</label>
          <input
            id={ids.to}
            type="date"
            value={applied.to}
            min={applied.from || undefined}
            onChange={(e) => apply({ to: e.target.value })}
          />
        </div>
        <div>
          <label htmlFor={ids.order}>Order</label>
          <select
            id={ids.order}
            value={applied.oldest ? 'oldest' : 'newest'}
            onChange={(e) => apply({ oldest: e.target.value === 'oldest' })}
          >
            <option value="newest">Newest first</option>
            <option value="oldest">Oldest first</option>
          </select>
        </div>
        <div className="check">
          <input id={ids.active} type="checkbox" checked={applied.active} onChange={(e) => apply({ active: e.target.checked })} />
          <label htmlFor={ids.active}>Active only</label>
        </div>
      </form>
      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}
      {runs === null && !error && <p className="muted">Loading…</p>}
      {/* the runs of the filter before, until the new filter's answer comes: said, and marked busy */}
      {runs && !current && !error && <p className="muted">Updating…</p>}
      {runs && runs.length === 0 && current && <p className="muted">No runs match.</p>}
      <div className="runs-shown" aria-busy={!current}>
        {runs && runs.length > 0 && (
          <>
            <Table
              labelledBy={titleId}
              className="runs"
              regionClassName="runs-table"
              rows={runs}
              rowKey={(r) => r.runId}
              rowProps={(r) => ({ 'data-run': r.runId })}
              columns={runColumns(jobKey, now)}
            />
            {/* a phone gets cards, status first: nothing scrolls sideways */}
            <ul className="run-cards" aria-labelledby={titleId}>
              {runs.map((r) => (
                <li key={r.runId} className="run-card" data-run-card={r.runId}>
                  <div className="run-card-head">
                    <Badge status={r.status} />
                    <Link to={`/runs/${r.runId}`} aria-label={`${r.jobKey} / ${r.businessKey}, run ${r.runId}`}>
                      {r.jobKey} / {r.businessKey}
                    </Link>
                  </div>
                  <p className="muted">
                    Partitions {r.successPartitionCount}/{r.failedPartitionCount}/{r.expectedPartitionCount ?? '—'} · extracted{' '}
                    {count(r.extractedCount)} · started {formatTime(r.startedAt)} · {elapsed(r.startedAt, r.completedAt, now)}
                    {r.errorCode && ` · ${r.errorCode}`}
                  </p>
                </li>
              ))}
            </ul>
          </>
        )}
      </div>
      <nav className="pager" aria-label="Pages of runs">
        {applied.after && (
          <Link to={`${path}${writeFilter({ ...applied, after: '' })}`} className="button">
            First page
          </Link>
        )}
        {next && (
          <Link to={`${path}${writeFilter({ ...applied, after: next })}`} className="button">
            Next page
          </Link>
        )}
      </nav>
    </>
  );
}
