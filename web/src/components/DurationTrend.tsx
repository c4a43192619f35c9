import { elapsed } from '../format';
import { tone } from '../states';

interface TrendRun {
  runId: string;
  status: string;
  startedAt: string;
  completedAt?: string | null;
}

const BAR = 6;
const GAP = 2;
const HEIGHT = 24;

const seconds = (run: TrendRun, now: number) =>
  Math.max(0, ((run.completedAt ? new Date(run.completedAt).getTime() : now) - new Date(run.startedAt).getTime()) / 1000);

/**
 * The durations of a job's recent runs as bars, oldest on the left (a run still going: to now), coloured by status;
 * the text a screen reader hears gives the same numbers.
 */
export function DurationTrend({ runs, now }: { runs: readonly TrendRun[]; now: number }) {
  const oldestFirst = [...runs].reverse();
  if (oldestFirst.length === 0) return <span className="muted">—</span>;
  const durations = oldestFirst.map((run) => seconds(run, now));
  const longest = Math.max(...durations, 1);
  const sorted = [...durations].sort((a, b) => a - b);
  const median = sorted[Math.floor(sorted.length / 2)]!;
  const asClock = (s: number) => elapsed(new Date(0).toISOString(), new Date(s * 1000).toISOString());
  const latest = oldestFirst.at(-1)!;
  const summary =
    `Durations of the last ${durations.length} runs, oldest first: shortest ${asClock(sorted[0]!)}, median ${asClock(median)}, ` +
    `longest ${asClock(sorted.at(-1)!)}; latest ${asClock(durations.at(-1)!)}${latest.completedAt ? '' : ' so far'}.`;
  return (
    <svg
      className="trend"
      role="img"
      aria-label={summary}
      width={oldestFirst.length * (BAR + GAP)}
      height={HEIGHT}
      viewBox={`0 0 ${oldestFirst.length * (BAR + GAP)} ${HEIGHT}`}
    >
      <title>{summary}</title>
      {oldestFirst.map((run, i) => {
        const height = Math.max(2, Math.round((durations[i]! / longest) * HEIGHT));
        return (
          <rect
            key={run.runId}
            className={`trend-bar tone-${tone(run.status)}${run.completedAt ? '' : ' trend-open'}`}
            x={i * (BAR + GAP)}
            y={HEIGHT - height}
            width={BAR}
            height={height}
          />
        );
      })}
    </svg>
  );
}
