import { useEffect, useId, useState } from 'react';
import { PARTITION_PAGE, type Partition, type RunDetail } from '../api/operations';
import { useQuery } from '../api/typed';
import { count, formatTime } from '../format';
import { PARTITION_STATUSES, tone } from '../states';
import { Badge } from './Badge';
import { type Column, Table } from './Table';

const PAGE = 50;

const PARTITION_COLUMNS: Array<Column<Partition>> = [
  { header: 'Status', cell: (p) => <Badge status={p.status} /> },
  {
    header: 'Rows received / expected',
    className: 'num',
    cell: (p) => `${count(p.receivedRows)} / ${count(p.expectedRowCount)}`,
  },
  { header: 'Chunks', className: 'num', cell: (p) => `${p.receivedChunks} of ${p.reportedChunkCount ?? '?'}` },
  { header: 'Attempts', className: 'num', cell: (p) => p.attemptCount },
  { header: 'Worker', cell: (p) => p.workerNode ?? '—' },
  { header: 'Last heartbeat', cell: (p) => formatTime(p.heartbeatAt) },
  { header: 'Error', className: 'message', cell: (p) => (p.errorCode ? `${p.errorCode} ${p.errorMessage ?? ''}` : '—') },
];

/** A large run's partitions as one bar: a segment per status, its width the share, its count in the legend. */
function SummaryBar({ run }: { run: RunDetail }) {
  const total = run.partitionCounts.reduce((sum, c) => sum + c.count, 0);
  return (
    <>
      <div className="pbar" aria-hidden="true">
        {run.partitionCounts.map((c) => (
          <span key={c.status} className={`pbar-part tone-${tone(c.status)}`} style={{ width: `${(c.count / total) * 100}%` }} />
        ))}
      </div>
      <ul className="legend" aria-label="Partitions by status">
        {run.partitionCounts.map((c) => (
          <li key={c.status} data-status-count={c.status}>
            <span className={`swatch tone-${tone(c.status)}`} aria-hidden="true" />
            {c.status.replaceAll('_', ' ')}: {count(c.count)}
          </li>
        ))}
      </ul>
    </>
  );
}

/**
 * A run too large for the grid: the summary bar, then its partitions a page at a time (partitionPage), filtered by
 * status and by a part of the partition id. The page shown is read again when the run's counts move.
 */
export function PartitionSummary({
  run,
  selected,
  onSelect,
}: {
  run: RunDetail;
  selected: string | null;
  onSelect(partition: Partition): void;
}) {
  const [status, setStatus] = useState('');
  const [search, setSearch] = useState('');
  const [applied, setApplied] = useState('');
  /** The cursors of the pages before the one shown ('' for the first page), so Previous works. */
  const [cursors, setCursors] = useState<string[]>(['']);
  const ids = { status: useId(), search: useId(), title: useId() };
  const after = cursors[cursors.length - 1]!;
  const moved = JSON.stringify(run.partitionCounts);

  useEffect(() => {
    const next = search.trim();
    // only a changed search goes back to the first page
    if (next === applied) return;
    const timer = setTimeout(() => {
      setApplied(next);
      setCursors(['']);
    }, 300);
    return () => clearTimeout(timer);
  }, [search, applied]);

  // `moved` re-reads the page as partitions progress
  const { data, error } = useQuery(
    PARTITION_PAGE,
    {
      runId: run.runId,
      first: PAGE,
      after: after || null,
      status: (status || null) as Partition['status'] | null,
      search: applied || null,
    },
    moved,
  );
  const connection = data?.run?.partitionPage;
  const page = connection && {
    nodes: connection.nodes,
    next: connection.pageInfo.hasNextPage ? connection.pageInfo.endCursor : null,
    total: connection.totalCount,
  };

  const first = (cursors.length - 1) * PAGE + 1;
  return (
    <div className="psummary">
      <SummaryBar run={run} />
      <form className="filters ptable-filters" role="search" aria-label="Filter partitions" onSubmit={(e) => e.preventDefault()}>
        <div>
          <label htmlFor={ids.status}>Partition status</label>
          <select
            id={ids.status}
            value={status}
            onChange={(e) => {
              setStatus(e.target.value);
              setCursors(['']);
            }}
          >
            <option value="">Any</option>
            {PARTITION_STATUSES.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </div>
        <div>
          <label htmlFor={ids.search}>Partition id contains</label>
          <input id={ids.search} type="search" value={search} spellCheck={false} onChange={(e) => setSearch(e.target.value)} />
        </div>
      </form>
      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}
      {page && (
        <>
          <p id={ids.title} data-testid="partition-range">
            {page.total === 0
              ? 'No partitions match.'
              : `Partitions ${count(first)}–${count(first + page.nodes.length - 1)} of ${count(page.total)}`}
          </p>
          {page.nodes.length > 0 && (
            <Table
              labelledBy={ids.title}
              className="ptable"
              rows={page.nodes}
              rowKey={(p) => p.partitionId}
              rowProps={(p) => ({ 'data-partition-row': p.partitionId })}
              cards
              columns={[
                {
                  header: 'Partition',
                  cell: (p) => (
                    <button
                      type="button"
                      className="link"
                      aria-pressed={selected === p.partitionId}
                      aria-label={`Partition ${p.partitionId}: ${p.status}`}
                      onClick={() => onSelect(p)}
                    >
                      {p.partitionId}
                    </button>
                  ),
                },
                ...PARTITION_COLUMNS,
              ]}
            />
          )}
          <div className="pager">
            {cursors.length > 1 && (
              <button type="button" onClick={() => setCursors((c) => c.slice(0, -1))}>
                Previous partitions
              </button>
            )}
            {page.next && (
              <button type="button" onClick={() => setCursors((c) => [...c, page.next!])}>
                Next partitions
              </button>
            )}
          </div>
        </>
      )}
    </div>
  );
}
