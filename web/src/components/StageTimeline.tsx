import { useRef } from 'react';
import type { RunDetail } from '../api/operations';
import { count, elapsed, formatTime } from '../format';
import { isActive } from '../states';

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

const WINDOW_MS = 60_000;

/**
 * Extraction progress: rows received (receivedRows: chunks count as they arrive, not only when a partition finishes)
 * against the source count, the rate over the last minute this page watched (the average since the start until then) and the
 * time left at that rate.
 */
export function ExtractionProgress({ run, now }: { run: RunDetail; now: number }) {
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
  while (list.length > 2 && list[0]!.at < now - WINDOW_MS) list.shift();

  const first = list[0]!;
  const last = list[list.length - 1]!;
  const span = (last.at - first.at) / 1000;
  const sinceStart = (now - new Date(run.startedAt).getTime()) / 1000;
  const rate =
    span >= 3 && last.rows > first.rows ? (last.rows - first.rows) / span : sinceStart > 0 && rows > 0 ? rows / sinceStart : null;
  const extracting = run.status === 'EXTRACTING';
  const remaining = total !== null ? Math.max(total - rows, 0) : null;
  const eta = extracting && rate && remaining !== null ? remaining / rate : null;
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
      </p>
    </div>
  );
}
