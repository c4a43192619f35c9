import { useCallback, useEffect, useId, useMemo, useState, type FormEvent } from 'react';
import {
  GATES,
  type Gate,
  OBSERVATIONS,
  PUBLICATION,
  READINESS,
  READINESS_CHANGED,
  type Readiness as ReadinessResult,
} from '../api/operations';
import { useLive, useQuery } from '../api/typed';
import { Badge } from '../components/Badge';
import { LiveIndicator } from '../components/Live';
import { RunOrAttempt } from '../components/RunOrAttempt';
import { type Column, Table } from '../components/Table';
import { formatTime, today } from '../format';
import { usePageTitle } from '../hooks';
import { Link, navigate, useLocation } from '../router';

/** Every attempt of a required job for the date, oldest first; read again when the job's latest attempt changes. */
function JobAttempts({ jobId, businessDate, latest }: { jobId: string; businessDate: string; latest: string }) {
  // `latest` changes when a new attempt or state arrives
  const { data, error } = useQuery(OBSERVATIONS, { jobId, businessDate }, latest);
  const attempts = data && (data.observations ?? []);
  if (error) return <span className="error">{error}</span>;
  if (!attempts) return <span className="muted">…</span>;
  if (attempts.length === 0) return <span className="muted">none</span>;
  return (
    <ol className="plain" aria-label={`Attempts of ${jobId}`}>
      {attempts.map((a) => (
        <li key={a.attempt} data-attempt={a.attempt}>
          #{a.attempt} <Badge status={a.state} /> <RunOrAttempt runId={a.runId} source={a.source} />{' '}
          <span className="muted">{formatTime(a.startedAt)}</span>
        </li>
      ))}
    </ol>
  );
}

function gateColumns(businessDate: string): Array<Column<Gate>> {
  return [
    { header: 'Consumer', cell: (g) => <Link to={`/gates/${encodeURIComponent(g.consumer)}`}>{g.consumer}</Link> },
    { header: 'Required jobs', cell: (g) => g.requiredJobs.join(', ') },
    { header: 'Expected by', cell: (g) => g.expectedBy.map((e) => `${e.jobId}: ${e.text}`).join('; ') || '—' },
    { header: 'Bound job', cell: (g) => g.boundJobKey ?? '—' },
    {
      header: 'Readiness',
      cell: (g) => (
        <Link to={`/readiness?${new URLSearchParams({ consumer: g.consumer, date: businessDate })}`}>Check on {businessDate}</Link>
      ),
    },
  ];
}

function jobColumns(readiness: ReadinessResult): Array<Column<ReadinessResult['jobs'][number]>> {
  return [
    { header: 'Required job', cell: (j) => j.jobId },
    { header: 'Ready', cell: (j) => <Badge status={j.ready ? 'SUCCEEDED' : 'FAILED'} label={j.ready ? 'yes' : 'no'} /> },
    { header: 'Latest attempt', className: 'num', cell: (j) => j.attempt ?? '—' },
    { header: 'State', cell: (j) => <Badge status={j.state} /> },
    { header: 'Blocks because', cell: (j) => (j.reason ? <Badge status={j.reason} /> : '—') },
    { header: 'Run', cell: (j) => (j.runId && j.latest ? <RunOrAttempt runId={j.runId} source={j.latest.source} /> : '—') },
    { header: 'Started', cell: (j) => formatTime(j.latest?.startedAt) },
    { header: 'Expected by', cell: (j) => (j.expectedBy ? `${j.expectedBy.text} (${formatTime(j.deadline)})` : '—') },
    { header: 'At the deadline', cell: (j) => (j.deadlineOutcome ? <Badge status={j.deadlineOutcome} /> : '—') },
    {
      header: 'Attempts',
      cell: (j) => (
        <JobAttempts
          jobId={j.jobId}
          businessDate={readiness.businessDate}
          latest={`${j.attempt}:${j.state}:${j.runId}:${readiness.decision?.version}`}
        />
      ),
    },
  ];
}

const NO_GATES: Gate[] = [];

/** Every gate: its consumer, required jobs and deadlines, with a link to check it for the date in the form. */
function GateList({ businessDate, onGates }: { businessDate: string; onGates(gates: Gate[]): void }) {
  const { data, error } = useQuery(GATES, {});
  const gates = data && (data.gates ?? NO_GATES);
  useEffect(() => {
    if (gates) onGates(gates);
  }, [gates, onGates]);
  return (
    <section aria-labelledby="gates-title">
      <h2 id="gates-title">Gates</h2>
      {error && <p className="error">{error}</p>}
      {!gates ? (
        !error && <p className="muted">Loading…</p>
      ) : gates.length === 0 ? (
        <p className="muted">No gates are defined.</p>
      ) : (
        <Table
          labelledBy="gates-title"
          rows={gates}
          rowKey={(g) => g.consumer}
          rowProps={(g) => ({ 'data-gate': g.consumer })}
          columns={gateColumns(businessDate)}
          cards
        />
      )}
    </section>
  );
}

/**
 * Whether a consumer may publish for a business date, per required job with its expected-by deadline, the
 * recorded decision (kept live: readinessChanged), each job's attempts, and what it published. The consumer and date
 * checked are in the URL; every gate is listed below.
 */
/** The consumer and business date a Readiness URL names, if it names both. */
function checkedIn(search: string): { consumer: string; businessDate: string } | null {
  const q = new URLSearchParams(search);
  const [consumer, businessDate] = [q.get('consumer'), q.get('date')];
  if (!consumer || !businessDate || !/^\d{4}-\d{2}-\d{2}$/.test(businessDate)) return null;
  return { consumer, businessDate };
}

export function Readiness() {
  usePageTitle('Readiness');
  const [gates, setGates] = useState<Gate[]>([]);
  const [consumer, setConsumer] = useState('');
  const [businessDate, setBusinessDate] = useState(today);
  const { search } = useLocation();
  const ids = { consumer: useId(), date: useId(), gates: useId() };
  /** What the URL names to check: a link, a reload, back and forward. */
  const checked = useMemo(() => checkedIn(search), [search]);
  /** Asks the same check again (the form submitted for what is already shown). */
  const [checks, setChecks] = useState(0);
  const readinessQuery = useQuery(READINESS, checked, checks);
  const publicationQuery = useQuery(PUBLICATION, checked, checks);
  const notPublished = publicationQuery.errorCode === 'PUBLICATION_NOT_FOUND';
  const error = readinessQuery.error ?? (notPublished ? null : publicationQuery.error);
  const readiness = readinessQuery.current ? readinessQuery.data?.readiness : null;
  // shown only once both answers are to this check: never one consumer's readiness beside another's publication
  const result =
    readiness && publicationQuery.current && !error
      ? { readiness, publication: notPublished ? null : (publicationQuery.data?.publication ?? null) }
      : null;
  const busy = checked !== null && !result && !error;
  const live = useLive(READINESS_CHANGED, result && { consumer: result.readiness.consumer, businessDate: result.readiness.businessDate }, {
    onData: ({ readinessChanged }) =>
      readinessQuery.setData((current) =>
        readinessChanged &&
        current?.readiness &&
        current.readiness.consumer === readinessChanged.consumer &&
        current.readiness.businessDate === readinessChanged.businessDate
          ? { readiness: readinessChanged }
          : current,
      ),
  });

  const listed = useCallback((listedGates: Gate[]) => {
    setGates(listedGates);
    setConsumer((c) => c || listedGates[0]?.consumer || '');
  }, []);

  // the form follows the URL
  useEffect(() => {
    if (!checked) return;
    setConsumer(checked.consumer);
    setBusinessDate(checked.businessDate);
  }, [checked]);

  const submit = (event: FormEvent) => {
    event.preventDefault();
    const target = `?${new URLSearchParams({ consumer: consumer.trim(), date: businessDate })}`;
    if (`?${search}` === target) setChecks((n) => n + 1);
    else navigate(`/readiness${target}`);
  };

  return (
    <>
      <h1 tabIndex={-1}>Readiness</h1>
      <form className="filters" onSubmit={submit} aria-label="Check readiness">
        <div>
          <label htmlFor={ids.consumer}>Consumer</label>
          <input
            id={ids.consumer}
            list={ids.gates}
            value={consumer}
            spellCheck={false}
            required
            onChange={(e) => setConsumer(e.target.value)}
          />
          <datalist id={ids.gates}>
            {gates.map((g) => (
              <option key={g.consumer} value={g.consumer} />
            ))}
          </datalist>
        </div>
        <div>
          <label htmlFor={ids.date}>Business date</label>
          <input id={ids.date} type="date" value={businessDate} required onChange={(e) => setBusinessDate(e.target.value)} />
        </div>
        <div className="submit">
          <button type="submit" className="primary" disabled={busy || !consumer.trim() || !businessDate}>
            {busy ? 'Checking…' : 'Check'}
          </button>
        </div>
      </form>
      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}

      {result && (
        <section aria-labelledby="readiness-result" aria-live="polite">
          <div className="page-head">
            <h2 id="readiness-result">
              {result.readiness.consumer} on {result.readiness.businessDate}:{' '}
              <Badge status={result.readiness.ready ? 'SUCCEEDED' : 'FAILED'} label={result.readiness.ready ? 'READY' : 'NOT READY'} />
            </h2>
            <LiveIndicator state={live} />
          </div>
          {!result.readiness.gateDefined && <p className="notice">No gate is defined for this consumer.</p>}
          {result.readiness.gateDefined && (
            <p data-testid="decision">
              {result.readiness.decision
                ? `Decision v${result.readiness.decision.version} (${result.readiness.decision.ready ? 'ready' : 'not ready'}) recorded ${formatTime(result.readiness.decision.decidedAt)}.`
                : 'No decision recorded: this date has not been ready.'}{' '}
              <Link to={`/gates/${encodeURIComponent(result.readiness.consumer)}`}>
                Publications, decisions and calls of {result.readiness.consumer}
              </Link>
            </p>
          )}
          <Table
            labelledBy="readiness-result"
            rows={result.readiness.jobs}
            rowKey={(j) => j.jobId}
            rowProps={(j) => ({ 'data-job': j.jobId })}
            columns={jobColumns(result.readiness)}
            cards
          />
          <h3>Publication</h3>
          {result.publication ? (
            <dl className="fields">
              <div className="field">
                <dt>Published</dt>
                <dd>
                  {formatTime(result.publication.publishedAt)} by {result.publication.publishedBy}
                </dd>
              </div>
              <div className="field">
                <dt>Output hash</dt>
                <dd>
                  <code className="wrap">{result.publication.outputHash}</code>
                </dd>
              </div>
              <div className="field">
                <dt>Evidence</dt>
                <dd>{result.publication.evidence.map((e) => `${e.jobId} #${e.attempt} (${e.runId})`).join(', ') || '—'}</dd>
              </div>
            </dl>
          ) : (
            <p className="muted">Not published for this date.</p>
          )}
        </section>
      )}
      <GateList businessDate={businessDate} onGates={listed} />
    </>
  );
}
