import { useCallback, useEffect, useRef, useState, type ReactNode } from 'react';
import { ApiError, describeError } from '../api/client';
import {
  CANCEL_RUN,
  REISSUE_PARTITION,
  RESEND_DISPATCH,
  RESOLVE_UNKNOWN,
  RUN,
  RUN_CHANGED,
  RUNS,
  type Dispatch,
  type Partition,
  type RunDetail as Run,
  type RunRow,
} from '../api/operations';
import { useApi, useLive } from '../api/typed';
import { ConfirmDialog, ReasonDialog, ResolveDialog } from '../components/ActionDialogs';
import { Badge } from '../components/Badge';
import { LiveIndicator, useAnnounce } from '../components/Live';
import { OperatorButton } from '../components/OperatorButton';
import { PartitionGrid } from '../components/PartitionGrid';
import { PartitionSummary } from '../components/PartitionSummary';
import { NextStepPanel, PublishUnknownPanel } from '../components/PublishPanel';
import { ExtractionProgress, StageTimeline } from '../components/StageTimeline';
import { StalledPartitions, stallOf } from '../components/StalledPartitions';
import { count, elapsed, formatDate, formatTime, shortId } from '../format';
import { useNow, useRunProgress } from '../hooks';
import { Link } from '../router';
import { RESENDABLE_DISPATCH_STATUSES, isCancellable, isReissuable } from '../states';

/** Up to this many partitions the page shows them all as a grid; a larger run gets a summary bar and a paged table. */
const GRID_MAX = 400;

type Action = { kind: 'resolve' } | { kind: 'cancel' } | { kind: 'resend'; dispatch: Dispatch } | { kind: 'reissue'; partitionId: string };

/** When and how a dispatch ended: acknowledged, dead or cancelled. */
function dispatchEnd(d: Dispatch): string {
  if (d.ackedAt) return `acknowledged ${formatTime(d.ackedAt)}`;
  if (d.deadAt) return `dead ${formatTime(d.deadAt)}`;
  if (d.cancelledAt) return `cancelled ${formatTime(d.cancelledAt)}`;
  return '—';
}

function Field({ label, children }: { label: string; children: ReactNode }) {
  return (
    <div className="field">
      <dt>{label}</dt>
      <dd>{children}</dd>
    </div>
  );
}

/** The other runs of the same job and business key (earlier and later attempts), newest first. */
function OtherAttempts({ run }: { run: Run }) {
  const api = useApi();
  const [others, setOthers] = useState<RunRow[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const { jobKey, businessKey, runId, status } = run;
  // biome-ignore lint/correctness/useExhaustiveDependencies: a status change may mean a retry was created: read again
  useEffect(() => {
    api
      .request(RUNS, { first: 20, filter: { jobKey, businessKey } })
      .then((d) => setOthers((d.runs?.nodes ?? []).filter((r) => r.runId !== runId)))
      .catch((e) => setError(describeError(e)));
  }, [api, jobKey, businessKey, runId, status]);
  return (
    <section aria-labelledby="attempts-title">
      <h2 id="attempts-title">Other attempts</h2>
      <p className="muted">
        Runs of {jobKey} for business key {businessKey}, newest first.
      </p>
      {error && <p className="error">{error}</p>}
      {others && others.length === 0 && <p className="muted">This is the only run for this job and business key.</p>}
      {others && others.length > 0 && (
        <ul className="attempts">
          {others.map((r) => (
            <li key={r.runId}>
              <Badge status={r.status} />{' '}
              <Link to={`/runs/${r.runId}`} aria-label={`Run ${r.runId}`}>
                {shortId(r.runId)}
              </Link>{' '}
              <span className="muted">
                started {formatTime(r.startedAt)}
                {r.errorCode && ` · ${r.errorCode}`}
              </span>
            </li>
          ))}
        </ul>
      )}
      <p>
        <Link to={`/jobs/${encodeURIComponent(jobKey)}`}>Every run of {jobKey}</Link>
      </p>
    </section>
  );
}

export function RunDetail({ runId }: { runId: string }) {
  const api = useApi();
  const announce = useAnnounce();
  const now = useNow();
  const [run, setRun] = useState<Run | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [missing, setMissing] = useState(false);
  const [selected, setSelected] = useState<string | null>(null);
  /** In the table layout, the partition picked from the page shown. */
  const [picked, setPicked] = useState<Partition | null>(null);
  const [action, setAction] = useState<Action | null>(null);
  /** Grid (every partition on the page) or table (a summary and a page of them), decided by the first read. */
  const [layout, setLayout] = useState<'grid' | 'table' | null>(null);

  const load = useCallback(() => {
    api
      .request(RUN, { runId, withPartitions: layout === 'grid' })
      .then((d) => {
        if (!d.run) {
          setMissing(true);
          return;
        }
        const total = d.run.partitionCounts.reduce((sum, c) => sum + c.count, 0);
        if (layout === null) setLayout(Math.max(total, d.run.expectedPartitionCount ?? 0) <= GRID_MAX ? 'grid' : 'table');
        else setRun(d.run);
        setError(null);
      })
      .catch((e) => {
        if (e instanceof ApiError && (e.code === 'RUN_NOT_FOUND' || e.code === 'INVALID_INPUT')) setMissing(true);
        else setError(describeError(e));
      });
  }, [api, runId, layout]);

  useEffect(() => load(), [load]);

  const shownStatus = useRef<string | null>(null);
  useEffect(() => {
    if (run && shownStatus.current && shownStatus.current !== run.status) announce(`Run status is now ${run.status.replaceAll('_', ' ')}.`);
    shownStatus.current = run?.status ?? null;
  }, [run, announce]);

  // the grid's partitions come as runProgress's deltas; runChanged brings the rest without them
  const live = useLive(RUN_CHANGED, missing || layout === null ? null : { runId, withPartitions: false }, {
    onData: ({ runChanged: changed }) => changed && setRun((old) => ({ ...changed, partitions: old?.partitions ?? changed.partitions })),
    onConnected: (reconnected) => reconnected && load(),
  });
  const { progress } = useRunProgress(!missing && layout === 'grid' ? runId : null);
  useEffect(() => {
    if (progress) setRun((old) => old && { ...old, partitions: progress.partitions });
  }, [progress]);

  if (missing) {
    return (
      <>
        <h1 tabIndex={-1}>Run not found</h1>
        <p>
          There is no run <code>{runId}</code>. <Link to="/">Back to the dashboard</Link>.
        </p>
      </>
    );
  }
  if (!run)
    return (
      <>
        <h1 tabIndex={-1}>Run {shortId(runId)}</h1>
        {error ? (
          <p className="error" role="alert">
            {error}
          </p>
        ) : (
          <p>Loading…</p>
        )}
      </>
    );

  const partition = run.partitions ? (run.partitions.find((p) => p.partitionId === selected) ?? null) : picked;
  const stall = stallOf(run, now);
  const resendable = (d: Dispatch) => (RESENDABLE_DISPATCH_STATUSES as readonly string[]).includes(d.status);
  const events = [...run.events].reverse();

  return (
    <>
      <nav aria-label="Breadcrumb" className="crumbs">
        <Link to="/">Dashboard</Link> › <span aria-current="page">Run {shortId(run.runId)}</span>
      </nav>
      <div className="page-head">
        <h1 tabIndex={-1}>
          {run.jobKey} <span className="muted">/</span> {run.businessKey}
        </h1>
        <Badge status={run.status} />
        <LiveIndicator state={live} />
      </div>
      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}

      <div className="toolbar" role="group" aria-label="Run actions">
        {run.status === 'PUBLISH_UNKNOWN' && (
          <OperatorButton className="danger" onClick={() => setAction({ kind: 'resolve' })}>
            Resolve PUBLISH_UNKNOWN…
          </OperatorButton>
        )}
        {isCancellable(run.status) && (
          <OperatorButton className={run.status === 'PUBLISHED' ? undefined : 'danger'} onClick={() => setAction({ kind: 'cancel' })}>
            Cancel run…
          </OperatorButton>
        )}
      </div>

      {run.status === 'PUBLISH_UNKNOWN' && <PublishUnknownPanel run={run} now={now} />}
      {run.status === 'PUBLISHED' && <NextStepPanel run={run} />}

      <section className="card" aria-labelledby="stages-title">
        <h2 id="stages-title">Stages</h2>
        <StageTimeline run={run} now={now} />
        {(run.status === 'EXTRACTING' || run.extractCompletedAt) && <ExtractionProgress run={run} now={now} stall={stall} />}
      </section>

      {stall && stall.partitions.length > 0 && (
        <StalledPartitions stall={stall} now={now} onReissue={(partitionId) => setAction({ kind: 'reissue', partitionId })} />
      )}

      <section className="card" aria-labelledby="summary-title">
        <h2 id="summary-title">Summary</h2>
        <dl className="fields">
          <Field label="Run id">
            <code>{run.runId}</code>
          </Field>
          <Field label="Created by">{run.createdBy ?? '—'}</Field>
          <Field label="Snapshot SCN">{run.snapshotScn ?? '—'}</Field>
          <Field label="Partitions (succeeded / failed / expected)">
            {run.successPartitionCount} / {run.failedPartitionCount} / {run.expectedPartitionCount ?? '—'}
          </Field>
          <Field label="Source rows">{count(run.sourceCount)}</Field>
          <Field label="Extracted rows">{count(run.extractedCount)}</Field>
          <Field label="Staging rows">{count(run.stagingCount)}</Field>
          <Field label="Target rows">{count(run.targetCount)}</Field>
          <Field label="Started">{formatTime(run.startedAt)}</Field>
          <Field label="Last change">{formatTime(run.heartbeatAt)}</Field>
          <Field label="Ended">{formatTime(run.completedAt)}</Field>
          <Field label="Elapsed">{elapsed(run.startedAt, run.completedAt, now)}</Field>
          <Field label="HDFS path">
            <code className="wrap">{run.hdfsRunPath ?? '—'}</code>
          </Field>
          <Field label="Stage table">
            <code>{run.stageTable ?? '—'}</code>
          </Field>
          <Field label="Cleaned">{formatTime(run.cleanedAt)}</Field>
          {run.purgedAt && <Field label="Details purged">{formatTime(run.purgedAt)}</Field>}
          {(run.errorCode || run.errorMessage) && (
            <Field label="Error">
              <span className="message">
                {[run.errorStage, run.errorCode].filter(Boolean).join(' / ')} {run.errorMessage}
              </span>
            </Field>
          )}
        </dl>
        {run.purgedAt && (
          <p className="notice" role="note">
            Details purged on {formatDate(new Date(run.purgedAt))} (ledger retention): this summary is all that is kept of the run; its
            partitions, metrics, dispatches and events were deleted.
          </p>
        )}
      </section>

      {!run.purgedAt && (
        <>
          <section aria-labelledby="partitions-title">
            <h2 id="partitions-title">
              Partitions <span className="muted">({count(run.partitionCounts.reduce((sum, c) => sum + c.count, 0))})</span>
            </h2>
            {run.partitionCounts.length === 0 ? (
              <p className="muted">No manifest yet.</p>
            ) : run.partitions ? (
              <PartitionGrid partitions={run.partitions} selected={selected} onSelect={(id) => setSelected(id === selected ? null : id)} />
            ) : (
              <PartitionSummary
                run={run}
                selected={picked?.partitionId ?? null}
                onSelect={(p) => setPicked(p.partitionId === picked?.partitionId ? null : p)}
              />
            )}
            {partition && (
              <div className="card partition-detail" aria-live="polite">
                <h3>
                  Partition {partition.partitionId} <Badge status={partition.status} />
                </h3>
                <dl className="fields">
                  <Field label="Expected rows">{count(partition.expectedRowCount)}</Field>
                  <Field label="Received rows">{count(partition.receivedRows)}</Field>
                  <Field label="Chunks">
                    {partition.receivedChunks} of {partition.reportedChunkCount ?? '?'}
                  </Field>
                  <Field label="Attempts">{partition.attemptCount}</Field>
                  <Field label="Worker node">{partition.workerNode ?? '—'}</Field>
                  <Field label="Last heartbeat">{formatTime(partition.heartbeatAt)}</Field>
                  {partition.errorCode && (
                    <Field label="Error">
                      {partition.errorCode} {partition.errorMessage}
                    </Field>
                  )}
                </dl>
                {run.status === 'EXTRACTING' && isReissuable(partition.status) && (
                  <OperatorButton className="danger" onClick={() => setAction({ kind: 'reissue', partitionId: partition.partitionId })}>
                    Reissue partition {partition.partitionId}…
                  </OperatorButton>
                )}
              </div>
            )}
          </section>

          <section aria-labelledby="metrics-title">
            <h2 id="metrics-title">Metrics</h2>
            {run.metrics.length === 0 ? (
              <p className="muted">No metrics recorded.</p>
            ) : (
              <div className="table-wrap" tabIndex={0} role="region" aria-labelledby="metrics-title">
                <table>
                  <thead>
                    <tr>
                      <th scope="col">Stage</th>
                      <th scope="col">Metric</th>
                      <th scope="col">Expected</th>
                      <th scope="col">Actual</th>
                      <th scope="col">Tolerance</th>
                      <th scope="col">Result</th>
                      <th scope="col">Measured</th>
                    </tr>
                  </thead>
                  <tbody>
                    {run.metrics.map((m) => (
                      <tr key={`${m.stage}:${m.metricName}:${m.queryVersion}`}>
                        <td>{m.stage}</td>
                        <td>{m.metricName}</td>
                        <td className="num">{m.expectedValue ?? '—'}</td>
                        <td className="num">{m.actualValue ?? '—'}</td>
                        <td>{m.tolerance ?? '—'}</td>
                        <td>
                          <Badge status={m.result} />
                        </td>
                        <td>{formatTime(m.measuredAt)}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
            )}
          </section>

          <section aria-labelledby="dispatches-title">
            <h2 id="dispatches-title">Dispatches</h2>
            {run.dispatches.length === 0 ? (
              <p className="muted">No calls to NiFi.</p>
            ) : (
              <div className="table-wrap" tabIndex={0} role="region" aria-labelledby="dispatches-title">
                <table className="dispatches">
                  <thead>
                    <tr>
                      <th scope="col">Type</th>
                      <th scope="col">Partition</th>
                      <th scope="col">Status</th>
                      <th scope="col">Attempts</th>
                      <th scope="col">Last HTTP status</th>
                      <th scope="col">Created</th>
                      <th scope="col">Sent</th>
                      <th scope="col">Next attempt</th>
                      <th scope="col">Ended</th>
                      <th scope="col">Last error</th>
                      <th scope="col">Id</th>
                      <th scope="col">Action</th>
                    </tr>
                  </thead>
                  <tbody>
                    {run.dispatches.map((d) => (
                      <tr key={d.dispatchId} data-dispatch={d.dispatchId}>
                        <td>{d.dispatchType}</td>
                        <td>{d.partitionId ?? '—'}</td>
                        <td>
                          <Badge status={d.status} />
                        </td>
                        <td className="num">{d.attemptCount}</td>
                        <td className="num" data-testid="http-status">
                          {d.lastHttpStatus ?? '—'}
                        </td>
                        <td>{formatTime(d.createdAt)}</td>
                        <td>{formatTime(d.sentAt)}</td>
                        <td>{d.status === 'PENDING' ? formatTime(d.nextAttemptAt) : '—'}</td>
                        <td>{dispatchEnd(d)}</td>
                        <td className="message">{d.lastError ?? '—'}</td>
                        <td>
                          <code>{shortId(d.dispatchId)}</code>
                        </td>
                        <td>
                          {resendable(d) && (
                            <OperatorButton
                              onClick={() => setAction({ kind: 'resend', dispatch: d })}
                              aria-label={`Resend ${d.status} dispatch ${shortId(d.dispatchId)}`}
                            >
                              Resend…
                            </OperatorButton>
                          )}
                        </td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
            )}
          </section>

          <section aria-labelledby="events-title">
            <h2 id="events-title">
              Events <span className="muted">(newest first)</span>
            </h2>
            {events.length === 0 ? (
              <p className="muted">No events.</p>
            ) : (
              <ol className="timeline">
                {events.map((e) => (
                  <li key={e.eventId} className={`level-${e.level}`}>
                    <time dateTime={e.eventTime}>{formatTime(e.eventTime)}</time>
                    <Badge status={e.level} />
                    <strong>{e.name}</strong>
                    {e.partitionId && <span> · partition {e.partitionId}</span>}
                    {e.errorCode && <span> · {e.errorCode}</span>}
                    {e.actor && <span className="muted"> · by {e.actor}</span>}
                    {e.processGroup && e.processGroup !== 'LOAD_CONTROL_API' && <span className="muted"> · {e.processGroup}</span>}
                    {e.message && <p className="message">{e.message}</p>}
                  </li>
                ))}
              </ol>
            )}
          </section>

          <OtherAttempts run={run} />
        </>
      )}

      {action?.kind === 'resolve' && (
        <ResolveDialog
          runLabel={`${shortId(run.runId)} (${run.jobKey} / ${run.businessKey})`}
          onClose={() => setAction(null)}
          onConfirm={async (resolution, reason) => {
            await api.request(RESOLVE_UNKNOWN, { input: { runId: run.runId, resolution, reason } });
            announce(`Run resolved as ${resolution}.`);
          }}
        />
      )}
      {action?.kind === 'cancel' && (
        <ReasonDialog
          title="Cancel run"
          confirmLabel="Cancel run"
          onClose={() => setAction(null)}
          onConfirm={async (reason) => {
            await api.request(CANCEL_RUN, { input: { runId: run.runId, reason } });
            announce('Run cancelled.');
          }}
        >
          <p>
            Cancel run <strong>{shortId(run.runId)}</strong> ({run.jobKey} / {run.businessKey}) in status {run.status}? Its unfinished
            partitions are abandoned and its undelivered dispatches cancelled.
          </p>
        </ReasonDialog>
      )}
      {action?.kind === 'reissue' && (
        <ReasonDialog
          title={`Reissue partition ${action.partitionId}`}
          confirmLabel="Reissue"
          onClose={() => setAction(null)}
          onConfirm={async (reason) => {
            await api.request(REISSUE_PARTITION, { input: { runId: run.runId, partitionId: action.partitionId, reason } });
            announce(`Partition ${action.partitionId} reissued.`);
          }}
        >
          <p>
            Take partition <strong>{action.partitionId}</strong> from its current owner, invalidate its chunks and ask NiFi to extract it
            again?
          </p>
        </ReasonDialog>
      )}
      {action?.kind === 'resend' && (
        <ConfirmDialog
          title="Resend dispatch"
          confirmLabel="Resend"
          onClose={() => setAction(null)}
          onConfirm={async () => {
            await api.request(RESEND_DISPATCH, { input: { runId: run.runId, dispatchId: action.dispatch.dispatchId } });
            announce(`Dispatch ${shortId(action.dispatch.dispatchId)} queued again.`);
          }}
        >
          <p>
            Queue the {action.dispatch.status} {action.dispatch.dispatchType} dispatch{' '}
            <strong>{shortId(action.dispatch.dispatchId)}</strong> for delivery again, with a fresh attempt budget?
          </p>
        </ConfirmDialog>
      )}
    </>
  );
}
