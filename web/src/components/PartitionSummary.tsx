import type { RunDetail } from '../api/operations';
import { count } from '../format';
import { tone } from '../states';

/** A large run's partitions as one bar: a segment per status, its width the share, its count in the legend. */
export function PartitionSummary({ run }: { run: RunDetail }) {
  const total = run.partitionCounts.reduce((sum, c) => sum + c.count, 0);
  return (
    <div className="psummary">
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
    </div>
  );
}
