import { useEffect, useRef, useState, type ReactNode } from 'react';
import { RUN, RUN_CHANGED, RUNS, type Dispatch, type Partition, type RunDetail as Run } from '../api/operations';
import { CANCEL_RUN, REISSUE_PARTITION, RESEND_DISPATCH, RESOLVE_UNKNOWN, RESUME_RUN } from '../../../schema/documents/operator.js';
import { useApi, useLive, useQuery } from '../api/typed';
import { ReasonDialog, ResolveDialog } from '../components/ActionDialogs';
import { Badge } from '../components/Badge';
import { LiveIndicator, useAnnounce } from '../components/Live';
import { OperatorButton } from '../components/OperatorButton';
import { PartitionGrid } from '../components/PartitionGrid';
import { PartitionSummary } from '../components/PartitionSummary';
import { NextStepPanel, PublishUnknownPanel } from '../components/PublishPanel';
import { EventTimeline } from '../components/EventTimeline';
import { ExtractionProgress, StageTimeline } from '../components/StageTimeline';
import { type Column, Table } from '../components/Table';
import { StalledPartitions, stallOf } from '../components/StalledPartitions';
import { count, elapsed, formatDate, formatTime, shortId } from '../format';
import { useNow, usePageTitle, useRunProgress } from '../hooks';
import { Link, navigate } from '../router';
import { RESENDABLE_DISPATCH_STATUSES, isReissuable } from '../states';

/** Up to this many partitions the page shows them all as a grid; a larger run gets a summary bar and a paged table. */
const GRID_MAX = 400;

type Action =
  | { kind: 'resolve' }
  | { kind: 'cancel' }
  | { kind: 'resume' }
  | { kind: 'resend'; dispatch: Dispatch }
  | { kind: 'reissue'; partitionId: string };

/** When and how a dispatch ended: acknowledged, dead or cancelled. */
function dispatchEnd(d: Dispatch): string {
  if (d.ackedAt) return `acknowledged ${formatTime(d.ackedAt)}`;
  if (d.deadAt) return `dead ${formatTime(d.deadAt)}`;
  if (d.cancelledAt) return `cancelled ${formatTime(d.cancelledAt)}`;
  return '—';
}

const METRIC_COLUMNS: Array<Column<Run['metrics'][number]>> = [
  { header: 'Stage', cell: (m) => m.stage },
  { header: 'Metric', cell: (m) => m.metricName },
  { header: 'Expected', className: 'num', cell: (m) => m.expectedValue ?? '—' },
  { header: 'Actual', className: 'num', cell: (m) => m.actualValue ?? '—' },
  { header: 'Tolerance', cell: (m) => m.tolerance ?? '—' },
  { header: 'Result', cell: (m) => <Badge status={m.result} /> },
  { header: 'Measured', cell: (m) => formatTime(m.measuredAt) },
];

function dispatchColumns(resendable: (d: Dispatch) => boolean, onResend: (d: Dispatch) => void): Array<Column<Dispatch>> {
  return [
    { header: 'Type', cell: (d) => d.dispatchType },
    { header: 'Partition', cell: (d) => d.partitionId ?? '—' },
    { header: 'Status', cell: (d) => <Badge status={d.status} /> },
    { header: 'Attempts', className: 'num', cell: (d) => d.attemptCount },
    { header: 'Last HTTP status', className: 'num', testId: 'http-status', cell: (d) => d.lastHttpStatus ?? '—' },
    { header: 'Created', cell: (d) => formatTime(d.createdAt) },
    { header: 'Sent', cell: (d) => formatTime(d.sentAt) },
    { header: 'Next attempt', cell: (d) => (d.status === 'PENDING' ? formatTime(d.nextAttemptAt) : '—') },
    { header: 'Ended', cell: dispatchEnd },
    { header: 'Last error', className: 'message', cell: (d) => d.lastError ?? '—' },
    { header: 'Id', cell: (d) => <code>{shortId(d.dispatchId)}</code> },
    {
      header: 'Action',
      cell: (d) =>
        resendable(d) && (
          <OperatorButton onClick={() => onResend(d)} aria-label={`Resend ${d.status} dispatch ${shortId(d.dispatchId)}`}>
            Resend…
          </OperatorButton>
        ),
    },
  ];
}

function Field({ label, children }: { label: string; children: ReactNode }) {
  return (
    <div className="field">
      <dt>{label}</dt>
      <dd>{children}</dd>
    </div>
  );
}

/** How many carried partition ids are listed before the rest is counted. */
const CARRIED_IDS_SHOWN = 40;

/** A resumed run's partitions that an earlier attempt extracted: which, and from which run. */
function CarriedPartitions({ run }: { run: Run }) {
  if (run.carriedPartitions.length === 0) return null;
  return (
    <section className="card" aria-labelledby="carried-title">
      <h2 id="carried-title">Carried over</h2>
      <p className="muted">
        This run resumes {run.resumedFromRunId && <Link to={`/runs/${run.resumedFromRunId}`}>run {shortId(run.resumedFromRunId)}</Link>} at
        its snapshot SCN. These partitions succeeded in an earlier attempt and were not extracted again; their files are in the same HDFS
        path.
      </p>
      <ul className="carried">
        {run.carriedPartitions.map((c) => {
          const more = c.partitionIds.length - CARRIED_IDS_SHOWN;
          return (
            <li key={c.fromRunId}>
              <strong>{c.partitionIds.length}</strong> {c.partitionIds.length === 1 ? 'partition' : 'partitions'} from{' '}
              <Link to={`/runs/${c.fromRunId}`} aria-label={`Run ${c.fromRunId}`}>
                run {shortId(c.fromRunId)}
              </Link>
              : <span className="ids">{c.partitionIds.slice(0, CARRIED_IDS_SHOWN).join(', ')}</span>
              {more > 0 && <span className="muted"> and {more} more</span>}
            </li>
          );
        })}
      </ul>
    </section>
  );
}

/** The other runs of the same job and business key (earlier and later attempts), newest first. */
function OtherAttempts({ run }: { run: Run }) {
  const { jobKey, businessKey, runId, status } = run;
  // a status change may mean a retry was created: read again
  const { data, error } = useQuery(RUNS, { first: 20, filter: { jobKey, businessKey } }, status);
  const others = data && (data.runs?.nodes ?? []).filter((r) => r.runId !== runId);
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
  const [selected, setSelected] = useState<string | null>(null);
  /** In the table layout, the partition picked from the page shown. */
  const [picked, setPicked] = useState<Partition | null>(null);
  const [action, setAction] = useState<Action | null>(null);
  /** Grid (every partition on the page) or table (a summary and a page of them), decided by the first read. */
  const [layout, setLayout] = useState<'grid' | 'table' | null>(null);
  const query = useQuery(RUN, { runId, withPartitions: layout === 'grid' });
  const { error, reload, setData } = query;
  const answered = query.data?.run;
  const missing = (query.data !== null && !answered) || query.errorCode === 'RUN_NOT_FOUND' || query.errorCode === 'INVALID_INPUT';
  // the first answer decides the layout; in the grid's, the run is shown once an answer carries its partitions
  const run = answered && layout !== null && (layout === 'table' || answered.partitions) ? answered : null;

  useEffect(() => {
    if (!answered || layout !== null) return;
    const total = answered.partitionCounts.reduce((sum, c) => sum + c.count, 0);
    setLayout(Math.max(total, answered.expectedPartitionCount ?? 0) <= GRID_MAX ? 'grid' : 'table');
  }, [answered, layout]);

  usePageTitle(
    missing ? 'Run not found' : run ? `${run.jobKey} / ${run.businessKey} (run ${shortId(run.runId)})` : `Run ${shortId(runId)}`,
  );

  const shownStatus = useRef<string | null>(null);
  useEffect(() => {
    if (run && shownStatus.current && shownStatus.current !== run.status) announce(`Run status is now ${run.status.replaceAll('_', ' ')}.`);
    shownStatus.current = run?.status ?? null;
  }, [run, announce]);

  // the grid's partitions come as runProgress's deltas; runChanged brings the rest without them
  const live = useLive(RUN_CHANGED, missing || layout === null ? null : { runId, withPartitions: false }, {
    onData: ({ runChanged: changed }) =>
      changed && setData((old) => ({ run: { ...changed, partitions: old?.run?.partitions ?? changed.partitions } })),
    onConnected: (reconnected) => reconnected && reload(),
  });
  const { progress } = useRunProgress(!missing && layout === 'grid' ? runId : null);
  useEffect(() => {
    if (progress) setData((old) => (old?.run ? { run: { ...old.run, partitions: progress.partitions } } : old));
  }, [progress, setData]);

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
  const allows = (action: Run['allowedActions'][number]) => run.allowedActions.includes(action);
  const stall = stallOf(run, now);
  const resendable = (d: Dispatch) => allows('RESEND_DISPATCH') && (RESENDABLE_DISPATCH_STATUSES as readonly string[]).includes(d.status);

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
        {allows('RESOLVE_UNKNOWN') && (
          <OperatorButton className="danger" onClick={() => setAction({ kind: 'resolve' })}>
            Resolve PUBLISH_UNKNOWN…
          </OperatorButton>
        )}
        {allows('RESUME') && <OperatorButton onClick={() => setAction({ kind: 'resume' })}>Resume at its SCN…</OperatorButton>}
        {allows('CANCEL') && (
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
          <Field label="Tags">
            {run.tags.length === 0 ? (
              '—'
            ) : (
              <ul className="tags" aria-label="Tags">
                {run.tags.map((tag) => (
                  <li key={tag.key}>
                    <code>
                      {tag.key}={tag.value}
                    </code>
                  </li>
                ))}
              </ul>
            )}
          </Field>
          <Field label="NiFi flow">
            {run.flowId ? `${run.flowRegistry ?? '—'} / ${run.flowBucket ?? '—'} / ${run.flowId}, version ${run.flowVersion ?? '—'}` : '—'}
          </Field>
          {run.resumedFromRunId && (
            <Field label="Resumes">
              <Link to={`/runs/${run.resumedFromRunId}`}>run {shortId(run.resumedFromRunId)}</Link>
            </Field>
          )}
          {run.resumedAsRunId && (
            <Field label="Resumed as">
              <Link to={`/runs/${run.resumedAsRunId}`}>run {shortId(run.resumedAsRunId)}</Link>
            </Field>
          )}
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

      <CarriedPartitions run={run} />

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
                {allows('REISSUE_PARTITION') && isReissuable(partition.status) && (
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
              <Table
                labelledBy="metrics-title"
                rows={run.metrics}
                rowKey={(m) => `${m.stage}:${m.metricName}:${m.queryVersion}`}
                columns={METRIC_COLUMNS}
              />
            )}
          </section>

          <section aria-labelledby="dispatches-title">
            <h2 id="dispatches-title">Dispatches</h2>
            {run.dispatches.length === 0 ? (
              <p className="muted">No calls to NiFi.</p>
            ) : (
              <Table
                labelledBy="dispatches-title"
                className="dispatches"
                rows={run.dispatches}
                rowKey={(d) => d.dispatchId}
                rowProps={(d) => ({ 'data-dispatch': d.dispatchId })}
                columns={dispatchColumns(resendable, (d) => setAction({ kind: 'resend', dispatch: d }))}
                cards
              />
            )}
          </section>

          <EventTimeline runId={run.runId} changed={run.events.at(-1)?.eventId ?? null} />

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
      {action?.kind === 'resume' && (
        <ReasonDialog
          title="Resume run"
          confirmLabel="Resume"
          onClose={() => setAction(null)}
          onConfirm={async (reason) => {
            const answer = await api.request(RESUME_RUN, { input: { runId: run.runId, reason } });
            const resumed = answer.resumeRun;
            if (!resumed) return;
            announce(`Resumed as run ${shortId(resumed.runId)}.`);
            navigate(`/runs/${resumed.runId}`);
          }}
        >
          <p>
            Start a new attempt of {run.jobKey} / {run.businessKey} at this run's snapshot SCN, in the same HDFS path? Its{' '}
            {run.successPartitionCount} succeeded partitions are carried over; NiFi extracts the other{' '}
            {(run.expectedPartitionCount ?? 0) - run.successPartitionCount} again.
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
        <ReasonDialog
          title="Resend dispatch"
          confirmLabel="Resend"
          onClose={() => setAction(null)}
          onConfirm={async (reason) => {
            await api.request(RESEND_DISPATCH, { input: { runId: run.runId, dispatchId: action.dispatch.dispatchId, reason } });
            announce(`Dispatch ${shortId(action.dispatch.dispatchId)} queued again.`);
          }}
        >
          <p>
            Queue the {action.dispatch.status} {action.dispatch.dispatchType} dispatch{' '}
            <strong>{shortId(action.dispatch.dispatchId)}</strong> for delivery again, with a fresh attempt budget?
          </p>
        </ReasonDialog>
      )}
    </>
  );
}
