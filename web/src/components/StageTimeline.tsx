import { useRef } from 'react';
import type { RunDetail } from '../api/operations';
import { count, elapsed, formatClock, formatTime } from '../format';
import { isActive } from '../states';
import { Badge } from './Badge';
import type { Stall } from './StalledPartitions';

interface Stage {
  name: string;
  at: string | null;
  note?: string;
}

/** The latest event of a name (the run's events are oldest first). */
const lastEvent = (run: RunDetail, name: string) => run.events.findLast((e) => e.name === name)?.eventTime ?? null;

/**
 * created → extracted → stage validated → published → success, each with when it was reached and how long it took
 * from the stage before; the stage under way shows how long it has been going.
 */
export function StageTimeline({ run, now }: { run: RunDetail; now: number }) {
  const stages: Stage[] = [
    { name: 'Created', at: run.startedAt },
    { name: 'Extracted', at: run.extractCompletedAt },
    { name: 'Stage validated', at: lastEvent(run, 'STAGE_VALIDATED') },
    {
      name: 'Published',
      at: run.publishedAt,
      note: run.publishStartedAt ? `publish started ${formatTime(run.publishStartedAt)}` : undefined,
    },
    { name: 'Success', at: run.status === 'SUCCESS' ? run.completedAt : null },
  ];
  const reached = stages.map((s) => s.at !== null);
  const next = reached.indexOf(false);
  const ended = !isActive(run.status);
  return (
    <ol className="stages" aria-label="Stages">
      {stages.map((stage, i) => {
        const previous = stages
          .slice(0, i)
          .reverse()
          .find((s) => s.at);
        const state = stage.at ? 'done' : i === next && !ended ? 'current' : i === next && ended ? 'stopped' : 'later';
        return (
          <li key={stage.name} className={`stage stage-${state}`} data-stage={stage.name} data-state={state}>
            <strong>{stage.name}</strong>
            {stage.at && (
              <>
                <time dateTime={stage.at}>{formatTime(stage.at)}</time>
                {previous?.at && <span className="duration">took {elapsed(previous.at, stage.at)}</span>}
              </>
            )}
            {state === 'current' && previous?.at && <span className="duration">under way for {elapsed(previous.at, null, now)}</span>}
            {state === 'stopped' && (
              <span className="duration">
                not reached: {run.status.replaceAll('_', ' ')}
                {run.completedAt && ` at ${formatTime(run.completedAt)}`}
              </span>
            )}
            {stage.note && <span className="muted">{stage.note}</span>}
          </li>
        );
      })}
    </ol>
  );
}

interface Sample {
  at: number;
  rows: number;
}

/** The rate is rows received over this much wall-clock time, up to now: nothing arriving brings it to 0. */
const WINDOW_MS = 60_000;
/** Watched for less than this, with rows arriving, the page shows the average since the start instead. */
const MIN_SPAN_MS = 5_000;

/**
 * Rows per second over the last WINDOW_MS of wall-clock time, from the counts this page saw and when: the rows at the
 * window's start are those of the last sample before it. Watched for less than that, the span watched; for less than
 * MIN_SPAN_MS, the average since the start, or 0 when the run has not moved for a whole window.
 */
function recentRate(samples: Sample[], now: number, startedAt: number, lastProgressAt: number | null): number | null {
  const latest = samples[samples.length - 1]!;
  const base = samples.findLast((s) => s.at <= now - WINDOW_MS);
  if (base) return (latest.rows - base.rows) / (WINDOW_MS / 1000);
  const first = samples[0]!;
  if (now - first.at >= MIN_SPAN_MS) return (latest.rows - first.rows) / ((now - first.at) / 1000);
  if (lastProgressAt !== null && now - lastProgressAt > WINDOW_MS) return 0;
  return now > startedAt && latest.rows > 0 ? latest.rows / ((now - startedAt) / 1000) : null;
}

/**
 * Extraction progress: rows received (receivedRows: chunks count as they arrive, not only when a partition finishes)
 * against the source count, the rate over the last minute (recentRate) and the time left at that rate — none for a
 * stalled run, which says since when nothing moved instead.
 */
export function ExtractionProgress({ run, now, stall }: { run: RunDetail; now: number; stall: Stall | null }) {
  const samples = useRef<Sample[]>([]);
  const partitions = run.partitions ?? null;
  const rows = Number(run.receivedRows);
  const total =
    run.sourceCount !== null
      ? Number(run.sourceCount)
      : partitions
        ? partitions.reduce((sum, p) => sum + Number(p.expectedRowCount), 0)
        : null;
  const list = samples.current;
  if (list.length === 0 || list[list.length - 1]!.rows !== rows) list.push({ at: now, rows });
  // one sample before the window is kept: the rows at the window's start
  while (list.length > 1 && list[1]!.at <= now - WINDOW_MS) list.shift();

  const extracting = run.status === 'EXTRACTING';
  const lastProgressAt = stall?.lastProgressAt ?? null;
  const rate = recentRate(list, now, new Date(run.startedAt).getTime(), lastProgressAt);
  const remaining = total !== null ? Math.max(total - rows, 0) : null;
  const eta = extracting && !stall?.stalled && rate && remaining !== null ? remaining / rate : null;
  const quiet = extracting && lastProgressAt !== null && now - lastProgressAt > WINDOW_MS;
  const expected = run.expectedPartitionCount;
  const done = run.successPartitionCount + run.failedPartitionCount;
  const percent = total ? Math.min(100, Math.floor((rows / total) * 100)) : expected ? Math.floor((done / expected) * 100) : 0;

  return (
    <div className="progress-block">
      <progress max={100} value={percent} aria-label="Extraction progress">
        {percent}%
      </progress>
      <p data-testid="progress">
        <strong>{percent}%</strong> · {count(rows)} of {total === null ? '?' : count(total)} rows · partitions {done} of {expected ?? '?'}
        {extracting && rate !== null && <> · {count(Math.round(rate))} rows/s</>}
        {eta !== null && <> · about {elapsed(new Date(0).toISOString(), new Date(eta * 1000).toISOString())} left</>}
        {quiet && lastProgressAt !== null && <> · no progress since {formatClock(lastProgressAt)}</>}
      </p>
      {stall?.stalled && (
        <p className="notice stall-notice" data-testid="stalled">
          <Badge status="STALLED" /> Nothing has moved for more than {Math.round(stall.stallAfterMs / 60_000)} min
          {stall.partitions.length > 0 && <> on {stall.partitions.length} RUNNING partition(s)</>}: no time left is estimated.
        </p>
      )}
    </div>
  );
}
