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

/**
 * What resolving PUBLISH_UNKNOWN needs (seed 1's procedure): when the publish started and how long it ran before its
 * outcome became unknown, the token and Hive query id to look for on the target, and the counts and metrics of every
 * stage side by side.
 */
export function PublishUnknownPanel({ run, now }: { run: RunDetail; now: number }) {
  const unknown = lastEvent(run, 'PUBLISH_UNKNOWN');
  return (
    <section className="card panel-warn" aria-labelledby="publish-unknown-title">
      <h2 id="publish-unknown-title">Publish outcome unknown</h2>
      <p>
        PG-50 could not tell whether the target was changed. Check the target with the token and query id below, then resolve: PUBLISHED if
        it holds this run's rows, FAILED_PUBLISH if it does not.
      </p>
      <dl className="fields">
        <div className="field">
          <dt>Publish started</dt>
          <dd>{formatTime(run.publishStartedAt)}</dd>
        </div>
        <div className="field">
          <dt>Ran for</dt>
          <dd>
            {run.publishStartedAt
              ? unknown
                ? `${elapsed(run.publishStartedAt, unknown.eventTime)} until reported unknown at ${formatTime(unknown.eventTime)}`
                : elapsed(run.publishStartedAt, null, now)
              : '—'}
          </dd>
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
        {unknown?.message && (
          <div className="field wide">
            <dt>PG-50 said</dt>
            <dd className="message">{unknown.message}</dd>
          </div>
        )}
      </dl>
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
