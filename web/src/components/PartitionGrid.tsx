import { useRef, useState, type KeyboardEvent } from 'react';
import type { Partition } from '../api/operations';
import { PARTITION_ABBREVIATIONS, tone } from '../states';

/**
 * Every partition as a cell coloured by status, with the status abbreviated inside and in full in its
 * accessible name. One Tab stop: the arrow keys, Home and End move between cells; Enter or Space selects.
 */
export function PartitionGrid({
  partitions,
  selected,
  onSelect,
}: {
  partitions: Partition[];
  selected: string | null;
  onSelect(partitionId: string): void;
}) {
  const [focusIndex, setFocusIndex] = useState(0);
  const list = useRef<HTMLUListElement>(null);
  const active = Math.min(focusIndex, Math.max(partitions.length - 1, 0));

  const columns = () => {
    const cells = list.current?.querySelectorAll('li');
    if (!cells || cells.length === 0) return 1;
    const top = (cells[0] as HTMLElement).offsetTop;
    let n = 0;
    while (n < cells.length && (cells[n] as HTMLElement).offsetTop === top) n++;
    return Math.max(n, 1);
  };

  const move = (event: KeyboardEvent) => {
    const last = partitions.length - 1;
    const step: Record<string, number> = { ArrowRight: 1, ArrowLeft: -1, ArrowDown: columns(), ArrowUp: -columns() };
    let next: number | undefined;
    if (event.key in step) next = Math.min(Math.max(active + step[event.key]!, 0), last);
    else if (event.key === 'Home') next = 0;
    else if (event.key === 'End') next = last;
    if (next === undefined) return;
    event.preventDefault();
    setFocusIndex(next);
    list.current?.querySelectorAll('button')[next]?.focus();
  };

  const counts = new Map<string, number>();
  for (const p of partitions) counts.set(p.status, (counts.get(p.status) ?? 0) + 1);

  return (
    <div className="pgrid-wrap">
      <ul className="legend" aria-label="Partitions by status">
        {[...counts].map(([status, n]) => (
          <li key={status}>
            <span className={`swatch tone-${tone(status)}`} aria-hidden="true" />
            {status.replaceAll('_', ' ')}: {n}
          </li>
        ))}
      </ul>
      <ul ref={list} className="pgrid" aria-label="Partition grid" onKeyDown={move}>
        {partitions.map((p, i) => (
          <li key={p.partitionId}>
            <button
              type="button"
              tabIndex={i === active ? 0 : -1}
              className={`cell tone-${tone(p.status)}${selected === p.partitionId ? ' selected' : ''}`}
              aria-pressed={selected === p.partitionId}
              // the visible id and abbreviation first (axe: label-content-name-mismatch), then the status in full
              aria-label={`Partition ${p.partitionId} ${PARTITION_ABBREVIATIONS[p.status] ?? p.status}: ${p.status}, ${p.receivedChunks} chunks received`}
              title={`${p.partitionId}: ${p.status}`}
              data-partition={p.partitionId}
              data-status={p.status}
              onFocus={() => setFocusIndex(i)}
              onClick={() => onSelect(p.partitionId)}
            >
              <span className="cell-id">{p.partitionId}</span>{' '}
              <span className="cell-status">{PARTITION_ABBREVIATIONS[p.status] ?? p.status}</span>
            </button>
          </li>
        ))}
      </ul>
    </div>
  );
}
