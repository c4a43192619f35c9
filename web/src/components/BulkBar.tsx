import type { ResultOf } from 'gql.tada';
import { useId, useState } from 'react';
import { BULK_ACTION } from '../../../schema/documents/operator.js';
import { describeError } from '../api/client';
import { useApi } from '../api/typed';
import { shortId } from '../format';
import { RUN_STATUSES } from '../states';
import { ReasonDialog } from './ActionDialogs';
import { Badge } from './Badge';
import { OperatorButton } from './OperatorButton';
import { type Column, Table } from './Table';

type Answer = ResultOf<typeof BULK_ACTION>['bulkAction'] & {};
type Target = Answer['targets'][number];
type Action = Answer['action'];

/** Each action as the bar names it, and what its targets are called. */
const ACTIONS: Record<Action, { label: string; verb: string; noun: string }> = {
  CANCEL_RUNS: { label: 'Cancel active runs', verb: 'Cancel', noun: 'run' },
  RESEND_DISPATCHES: { label: 'Resend DEAD dispatches', verb: 'Resend', noun: 'dispatch' },
  REISSUE_PARTITIONS: { label: 'Reissue timed-out partitions', verb: 'Reissue', noun: 'partition' },
};

const plural = (n: number, noun: string) => `${n} ${noun}${n === 1 ? '' : noun.endsWith('h') ? 'es' : 's'}`;

function summary(answer: Answer): string {
  const verb = answer.dryRun ? 'would be changed' : 'changed';
  const refusals = answer.refusals.map((r) => `${r.code} ${r.count}`).join(', ');
  return `${plural(answer.targets.length, 'target')}: ${answer.changed} ${verb}, ${answer.alreadySo} already so, ${answer.refused} refused${refusals ? ` (${refusals})` : ''}.`;
}

const columns: Array<Column<Target>> = [
  { header: 'Run', rowHeader: true, cell: (t) => shortId(t.runId) },
  { header: 'Business key', cell: (t) => t.businessKey },
  { header: 'Status', cell: (t) => <Badge status={t.runStatus} /> },
  { header: 'Target', cell: (t) => (t.dispatchId ? `${t.dispatchType} ${shortId(t.dispatchId)}` : (t.partitionId ?? 'the run')) },
  { header: 'Outcome', cell: (t) => (t.code ? `${t.outcome} (${t.code})` : t.outcome) },
];

/**
 * One action over the job's runs a filter selects (README "Bulk actions"): Preview lists the targets (a dry run);
 * applying asks for a reason in a confirmation that names their count, then shows what became of them.
 */
export function BulkBar({ jobKey }: { jobKey: string }) {
  const api = useApi();
  const ids = { action: useId(), status: useId(), from: useId(), to: useId(), code: useId(), title: useId() };
  const [form, setForm] = useState({ action: 'CANCEL_RUNS' as Action, status: '', from: '', to: '', errorCode: '' });
  const [preview, setPreview] = useState<Answer | null>(null);
  const [result, setResult] = useState<Answer | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [confirming, setConfirming] = useState(false);
  const change = (patch: Partial<typeof form>) => {
    setForm((f) => ({ ...f, ...patch }));
    setPreview(null);
  };
  const filter = {
    jobKey,
    status: (form.status || null) as Target['runStatus'] | null,
    businessDateFrom: form.from || null,
    businessDateTo: form.to || null,
    errorCode: form.errorCode.trim() || null,
  };
  const run = async (dryRun: boolean, reason: string | null) =>
    (await api.request(BULK_ACTION, { input: { action: form.action, filter, dryRun, reason } })).bulkAction!;
  const action = ACTIONS[form.action];
  const changeable = preview ? preview.targets.length - preview.refused : 0;

  return (
    <section className="bulk" aria-labelledby={ids.title}>
      <h2 id={ids.title}>Bulk action</h2>
      <form
        className="filters"
        aria-label="Bulk action filter"
        onSubmit={async (e) => {
          e.preventDefault();
          setError(null);
          setResult(null);
          try {
            setPreview(await run(true, null));
          } catch (failure) {
            setError(describeError(failure));
          }
        }}
      >
        <label htmlFor={ids.action}>Action</label>
        <select id={ids.action} value={form.action} onChange={(e) => change({ action: e.target.value as Action })}>
          {Object.entries(ACTIONS).map(([value, a]) => (
            <option key={value} value={value}>
              {a.label}
            </option>
          ))}
        </select>
        <label htmlFor={ids.status}>Run status</label>
        <select id={ids.status} value={form.status} onChange={(e) => change({ status: e.target.value })}>
          <option value="">any</option>
          {RUN_STATUSES.map((s) => (
            <option key={s} value={s}>
              {s}
            </option>
          ))}
        </select>
        <label htmlFor={ids.from}>Business date from</label>
        <input id={ids.from} type="date" value={form.from} onChange={(e) => change({ from: e.target.value })} />
        <label htmlFor={ids.to}>to</label>
        <input id={ids.to} type="date" value={form.to} onChange={(e) => change({ to: e.target.value })} />
        <label htmlFor={ids.code}>Error code</label>
        <input id={ids.code} value={form.errorCode} onChange={(e) => change({ errorCode: e.target.value })} />
        <button type="submit">Preview</button>
      </form>
      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}
      {preview && (
        <div data-testid="bulk-preview">
          <p role="status">Preview: {summary(preview)}</p>
          {preview.targets.length > 0 && (
            <Table
              columns={columns}
              rows={preview.targets}
              rowKey={(t) => `${t.runId} ${t.dispatchId ?? t.partitionId ?? ''}`}
              label="Targets"
            />
          )}
          {changeable > 0 && (
            <OperatorButton className="danger" onClick={() => setConfirming(true)}>
              {action.verb} {plural(changeable, action.noun)}…
            </OperatorButton>
          )}
        </div>
      )}
      {result && (
        <p role="status" data-testid="bulk-result">
          Done: {summary(result)}
        </p>
      )}
      {confirming && preview && (
        <ReasonDialog
          title={`${action.verb} ${plural(changeable, action.noun)} of ${jobKey}?`}
          confirmLabel={`${action.verb} ${plural(changeable, action.noun)}`}
          onClose={() => setConfirming(false)}
          onConfirm={async (reason) => {
            setResult(await run(false, reason));
            setPreview(null);
          }}
        >
          <p>
            Each of the {plural(preview.targets.length, 'target')} listed is selected again and changed in its own transaction, with this
            reason in its event; any that moved since the preview is counted as it is then.
          </p>
        </ReasonDialog>
      )}
    </section>
  );
}
