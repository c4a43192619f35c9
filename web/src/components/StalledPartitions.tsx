import type { Partition, RunDetail } from '../api/operations';
import { elapsed, formatTime } from '../format';
import { OperatorButton } from './OperatorButton';

/** A run's stall as of `now`: its silent RUNNING partitions, when it last moved, and whether it stalled. */
export interface Stall {
  stallAfterMs: number;
  lastProgressAt: number;
  partitions: Partition[];
  stalled: boolean;
}

const heartbeat = (p: Partition) => (p.heartbeatAt ? Date.parse(p.heartbeatAt) : 0);

/**
 * Judged on the page as time passes, since a stalled run sends nothing that would make it read again: Run.stall's
 * quietest RUNNING partitions, each as fresh as the partitions the page holds (the grid's come as deltas), silent once
 * its heartbeat is older than monitor.stallAfter. The run stalled once one is, or it has not moved for that long.
 * Null for a run that is not extracting.
 */
export function stallOf(run: RunDetail, now: number): Stall | null {
  if (run.status !== 'EXTRACTING' || !run.stall) return null;
  const stallAfterMs = run.stall.stallAfterSeconds * 1000;
  const held = new Map((run.partitions ?? []).map((p) => [p.partitionId, p]));
  const quietest = run.stall.quietestPartitions.map((p) => held.get(p.partitionId) ?? p);
  const lastProgressAt = Math.max(Date.parse(run.stall.lastProgressAt), ...(run.partitions ?? []).map(heartbeat));
  const partitions = quietest.filter((p) => p.status === 'RUNNING' && now - heartbeat(p) > stallAfterMs);
  return { stallAfterMs, lastProgressAt, partitions, stalled: partitions.length > 0 || now - lastProgressAt > stallAfterMs };
}

/** The silent partitions, longest silent first, each reissuable (the operator's reissuePartition). */
export function StalledPartitions({ stall, now, onReissue }: { stall: Stall; now: number; onReissue(partitionId: string): void }) {
  const minutes = Math.round(stall.stallAfterMs / 60_000);
  return (
    <section className="card stalled" aria-labelledby="stalled-title">
      <h2 id="stalled-title">Stalled partitions ({stall.partitions.length})</h2>
      <p>
        RUNNING partitions without a heartbeat for more than {minutes} min (monitor.stallAfter). The sweeper acts on them only at
        recovery.stale; reissuing one takes it from its owner and has NiFi extract it again.
      </p>
      <ul className="stalled-list">
        {stall.partitions.map((p) => (
          <li key={p.partitionId} data-stalled-partition={p.partitionId}>
            <span>
              <strong>Partition {p.partitionId}</strong> · {p.workerNode ?? 'no worker node'} · attempt {p.attemptCount} ·{' '}
              {p.receivedChunks} of {p.reportedChunkCount ?? '?'} chunks
              <br />
              <span className="muted">
                last heartbeat {formatTime(p.heartbeatAt)} ({elapsed(p.heartbeatAt, null, now)} ago)
              </span>
            </span>
            <OperatorButton className="danger" onClick={() => onReissue(p.partitionId)}>
              Reissue {p.partitionId}…
            </OperatorButton>
          </li>
        ))}
      </ul>
    </section>
  );
}
