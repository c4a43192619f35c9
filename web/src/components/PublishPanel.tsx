import { useState } from 'react';
import type { RunDetail } from '../api/operations';
import { count, elapsed, formatTime } from '../format';
import { type Column, Table } from './Table';

const lastEvent = (run: RunDetail, name: string) => run.events.findLast((e) => e.name === name) ?? null;

/** The counts of every stage next to each other, and each metric's value per stage. */
function SideBySide({ run }: { run: RunDetail }) {
  const stages = [...new Set(run.metrics.map((m) => m.stage))];
  const names = [...new Set(run.metrics.map((m) => m.metricName))];
  const value = (stage: string, name: string) => run.metrics.find((m) => m.stage === stage && m.metricName === name);
  return (
    <>
      <Table
        label="Row counts by stage"
        caption="Row counts by stage"
        rows={[run]}
        rowKey={(r) => r.runId}
        columns={[
          { header: 'Source', className: 'num', cell: (r) => count(r.sourceCount) },
          { header: 'Extracted', className: 'num', cell: (r) => count(r.extractedCount) },
          { header: 'Staging', className: 'num', cell: (r) => count(r.stagingCount) },
          { header: 'Target', className: 'num', cell: (r) => count(r.targetCount) },
        ]}
      />
      {names.length > 0 && (
        <Table
          label="Metrics by stage"
          caption="Metrics by stage"
          rows={names}
          rowKey={(name) => name}
          columns={[
            { header: 'Metric', rowHeader: true, cell: (name) => name },
            ...stages.map(
              (stage): Column<string> => ({
                header: stage,
                className: 'num',
                cell: (name) => {
                  const m = value(stage, name);
                  return m ? `${m.actualValue ?? '—'} (${m.result})` : '—';
                },
              }),
            ),
          ]}
        />
      )}
    </>
  );
}

/** A text to copy, with a button that copies it. */
function CopyText({ text, label }: { text: string; label: string }) {
  const [copied, setCopied] = useState(false);
  return (
    <>
      <pre className="check-query" data-testid="copy-text">
        {text}
      </pre>
      <button
        type="button"
        onClick={() => {
          void navigator.clipboard?.writeText(text).then(() => setCopied(true));
        }}
      >
        Copy {label.toLowerCase()}
      </button>{' '}
      <span role="status">{copied ? 'Copied.' : ''}</span>
    </>
  );
}

/**
 * What resolving PUBLISH_UNKNOWN needs (Run.publishUnknown): who raised it — PG-50, with its message, query id and
 * details, or the sweeper because PG-50 never answered —, the publish window, the target and the rows it should
 * hold, the job's check to run on it (console.publishChecks), and the counts and metrics of every stage side by side.
 */
export function PublishUnknownPanel({ run, now }: { run: RunDetail; now: number }) {
  const kit = run.publishUnknown;
  const bySweeper = kit?.raisedBy === 'SWEEPER';
  const details = kit?.reportedDetails && Object.keys(kit.reportedDetails).length > 0 ? JSON.stringify(kit.reportedDetails, null, 2) : null;
  return (
    <section className="card panel-warn" aria-labelledby="publish-unknown-title">
      <h2 id="publish-unknown-title">Publish outcome unknown</h2>
      <p>
        {bySweeper
          ? 'PG-50 never reported how the publish ended: the sweeper declared its outcome unknown.'
          : 'PG-50 could not tell whether the target was changed.'}{' '}
        Check the target below, then resolve: PUBLISHED if it holds this run's rows, FAILED_PUBLISH if it does not.
      </p>
      <dl className="fields">
        <div className="field">
          <dt>Raised by</dt>
          <dd data-testid="raised-by">
            {kit ? (bySweeper ? 'the sweeper (no result from PG-50)' : `PG-50 (${kit.actor ?? 'unknown token'})`) : '—'}
          </dd>
        </div>
        <div className="field">
          <dt>Publish claimed</dt>
          <dd>{formatTime(kit?.publishStartedAt ?? run.publishStartedAt)}</dd>
        </div>
        <div className="field">
          <dt>Unknown since</dt>
          <dd>
            {kit
              ? `${formatTime(kit.raisedAt)} (${elapsed(kit.publishStartedAt ?? run.publishStartedAt, kit.raisedAt)} after the claim)`
              : run.publishStartedAt
                ? `publishing for ${elapsed(run.publishStartedAt, null, now)}`
                : '—'}
          </dd>
        </div>
        <div className="field">
          <dt>Target</dt>
          <dd data-testid="publish-target">
            {kit?.target ? <code className="wrap">{kit.target}</code> : 'not configured for this job (console.publishChecks)'}
          </dd>
        </div>
        <div className="field">
          <dt>Expected rows</dt>
          <dd>{count(kit?.expectedRows ?? run.stagingCount)}</dd>
        </div>
        <div className="field">
          <dt>Publish token</dt>
          <dd>
            <code className="wrap">{run.publishToken ?? '—'}</code>
          </dd>
        </div>
        <div className="field">
          <dt>Hive query id</dt>
          <dd>{run.publishQueryId ? <code className="wrap">{run.publishQueryId}</code> : 'not reported by PG-50'}</dd>
        </div>
        {kit?.message && (
          <div className="field wide">
            <dt>{bySweeper ? 'The sweeper said' : 'PG-50 said'}</dt>
            <dd className="message">
              {kit.errorCode && <code>{kit.errorCode}</code>} {kit.message}
            </dd>
          </div>
        )}
        {details && (
          <div className="field wide">
            <dt>PG-50's details</dt>
            <dd>
              <pre className="check-query">{details}</pre>
            </dd>
          </div>
        )}
      </dl>
      <h3>Check on the target</h3>
      {kit?.checkQuery ? (
        <CopyText text={kit.checkQuery} label="Check query" />
      ) : (
        <p className="muted">No check is configured for this job: add one to console.publishChecks.</p>
      )}
      <SideBySide run={run} />
    </section>
  );
}

/** After PUBLISHED: the target holds the data, and target validation (PG-60) decides SUCCESS. */
export function NextStepPanel({ run }: { run: RunDetail }) {
  const resolved = lastEvent(run, 'PUBLISH_UNKNOWN_RESOLVED');
  return (
    <section className="card panel-next" aria-labelledby="next-step-title">
      <h2 id="next-step-title">Next: target validation</h2>
      <p>
        The target holds this run's data
        {resolved ? ` (resolved as PUBLISHED by ${resolved.actor ?? 'an operator'}: ${resolved.message})` : ''}. NiFi's PG-60 now validates
        the target: it records the TARGET metrics and calls <code>markSuccess</code>, which makes the run SUCCESS or
        FAILED_TARGET_VALIDATION. If the flow stopped after PG-50, start PG-60 for run <code>{run.runId}</code>.
      </p>
      <p className="muted">Cancelling now leaves the published rows in the target: the run's events will say it was published first.</p>
    </section>
  );
}
