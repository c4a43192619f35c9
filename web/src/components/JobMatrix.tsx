import { useEffect, useLayoutEffect, useRef, useState } from 'react';
import { JOB_MATRIX, RUNS_CHANGED, type JobMatrix as Matrix } from '../api/operations';
import { useLive, useQuery } from '../api/typed';
import type { LiveState } from '../hooks';
import { Link } from '../router';
import { LiveIndicator } from './Live';
import { tone } from '../states';

type Cell = Matrix['rows'][number]['cells'][number];

const DAY_CHOICES = [7, 14, 31] as const;
const RELOAD_EVERY_MS = 2000;

/** The date `days` before or after a YYYY-MM-DD date. */
function shift(date: string, days: number): string {
  const d = new Date(`${date}T00:00:00Z`);
  d.setUTCDate(d.getUTCDate() + days);
  return d.toISOString().slice(0, 10);
}

/** What a cell shows: the latest attempt's status (a run's own, else the observation's state). */
const statusOf = (cell: Cell) => cell.latest?.runStatus ?? cell.latest?.state ?? null;

/** A cell: what it shows, and around it (for a screen reader, and as its tooltip) which job and date, which attempt. */
function MatrixCell({ jobId, cell }: { jobId: string; cell: Cell }) {
  const status = statusOf(cell)?.replaceAll('_', ' ') ?? null;
  const attempt = cell.latest ? `attempt ${cell.latest.attempt} of ${cell.attempts}` : 'no attempt';
  const gate = cell.gateReady === null ? '' : cell.gateReady ? 'gate ready' : 'gate not ready';
  const title = [`${jobId} on ${cell.businessDate}: ${status ?? 'no attempt'}`, cell.latest && attempt, gate].filter(Boolean).join(', ');
  const face = (
    <>
      <span className="visually-hidden">
        {jobId} on {cell.businessDate}:
      </span>{' '}
      <span className="matrix-status">
        {status ?? 'none'}
        {cell.latest && <span className="visually-hidden">, {attempt}</span>}
      </span>
      {cell.attempts > 1 && (
        <span className="matrix-attempts" aria-hidden="true">
          ×{cell.attempts}
        </span>
      )}
      {gate && (
        <span className="matrix-gate">
          <span className="visually-hidden">, gate </span>
          {cell.gateReady ? 'ready' : 'not ready'}
        </span>
      )}
    </>
  );
  const className = `matrix-cell tone-${status ? tone(statusOf(cell)!) : 'muted'}`;
  if (cell.latest?.source === 'LOAD_CONTROL')
    return (
      <Link to={`/runs/${cell.latest.runId}`} className={className} title={title} data-date={cell.businessDate}>
        {face}
      </Link>
    );
  return (
    <span className={className} title={title} data-date={cell.businessDate}>
      {face}
    </span>
  );
}

/**
 * Jobs over business dates, like Airflow's grid: for one job (jobKeys) or a gate's jobs (consumer), the last N
 * business dates as columns, each cell the latest attempt with the number of attempts and, for a gated job, whether
 * its gate is ready; a Load Control run's cell links to the run. Read again (at most every 2 s) when a run changes.
 */
export function JobMatrix({ jobKeys, consumer, onLive }: { jobKeys?: string[]; consumer?: string; onLive?(state: LiveState): void }) {
  // a phone shows a week without scrolling far
  const [days, setDays] = useState<number>(() => (window.matchMedia('(max-width: 640px)').matches ? 7 : 14));
  const [endDate, setEndDate] = useState<string | null>(null);
  const { data, error, reload } = useQuery(JOB_MATRIX, { jobKeys: jobKeys ?? null, consumer: consumer ?? null, days, endDate });
  const matrix = data?.jobMatrix ?? null;
  const shownEnd = endDate ?? matrix?.businessDates.at(-1) ?? null;
  const rowJobs = new Set(matrix?.rows.map((r) => r.jobId) ?? jobKeys ?? []);

  const pending = useRef<ReturnType<typeof setTimeout> | null>(null);
  useEffect(() => () => void (pending.current && clearTimeout(pending.current)), []);
  const live = useLive(
    RUNS_CHANGED,
    { jobKey: jobKeys?.length === 1 ? jobKeys[0]! : null },
    {
      onData: ({ runChanged }) => {
        if (!runChanged || !rowJobs.has(runChanged.jobKey) || pending.current) return;
        pending.current = setTimeout(() => {
          pending.current = null;
          reload();
        }, RELOAD_EVERY_MS);
      },
      onConnected: (reconnected) => reconnected && reload(),
    },
  );
  useEffect(() => onLive?.(live), [live, onLive]);

  // the newest dates are on the right, like Airflow's grid: a new range opens scrolled to them (a live reload of the
  // same range keeps where the operator scrolled)
  const wrap = useRef<HTMLDivElement>(null);
  const range = matrix ? `${matrix.businessDates[0]}..${matrix.businessDates.at(-1)}` : null;
  useLayoutEffect(() => {
    if (range && wrap.current) wrap.current.scrollLeft = wrap.current.scrollWidth;
  }, [range]);

  return (
    <section aria-labelledby="matrix-title" className="matrix">
      <div className="page-head">
        <h2 id="matrix-title">By business date</h2>
        {/* a page that shows its own liveness takes the matrix's (onLive); on another page the matrix says it */}
        {!onLive && <LiveIndicator state={live} />}
      </div>
      <div className="matrix-controls">
        <label>
          Dates
          <select value={days} onChange={(e) => setDays(Number(e.target.value))}>
            {DAY_CHOICES.map((n) => (
              <option key={n} value={n}>
                {n}
              </option>
            ))}
          </select>
        </label>
        <button type="button" disabled={!shownEnd} onClick={() => shownEnd && setEndDate(shift(shownEnd, -days))}>
          Earlier
        </button>
        <button type="button" disabled={!shownEnd || endDate === null} onClick={() => shownEnd && setEndDate(shift(shownEnd, days))}>
          Later
        </button>
      </div>
      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}
      {!matrix && !error && <p className="muted">Loading…</p>}
      {matrix && matrix.rows.length === 0 && <p className="muted">No jobs.</p>}
      {matrix && matrix.rows.length > 0 && (
        <div className="table-wrap" ref={wrap} tabIndex={0} role="region" aria-label="Jobs by business date">
          <table className="matrix-table">
            <thead>
              <tr>
                <th scope="col">Job</th>
                {matrix.businessDates.map((date, i) => (
                  <th scope="col" key={date} title={date}>
                    <span className="visually-hidden">{date}</span>
                    <span aria-hidden="true">{date.slice(5)}</span>
                    {matrix.consumerReadiness.length > 0 && (
                      <span className={`matrix-ready tone-${matrix.consumerReadiness[i] ? 'good' : 'muted'}`}>
                        {matrix.consumerReadiness[i] ? 'ready' : 'not ready'}
                      </span>
                    )}
                  </th>
                ))}
              </tr>
            </thead>
            <tbody>
              {matrix.rows.map((row) => (
                <tr key={row.jobId} data-matrix-job={row.jobId}>
                  <th scope="row">
                    {row.jobId}
                    {row.gatedBy && (
                      <span className="muted matrix-gated">
                        <span className="visually-hidden">, </span>gate {row.gatedBy}
                      </span>
                    )}
                  </th>
                  {row.cells.map((cell) => (
                    <td key={cell.businessDate}>
                      <MatrixCell jobId={row.jobId} cell={cell} />
                    </td>
                  ))}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}
