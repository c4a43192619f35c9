import { useEffect, useId, useState, type FormEvent } from 'react';
import { RESEND_DISPATCH } from '../../../schema/documents/operator.js';
import { GATE, PUBLICATIONS } from '../api/operations';
import type { Attempt, AuditedPublication, GateDispatch } from '../api/operations';
import { useApi, useQuery } from '../api/typed';
import { ReasonDialog } from '../components/ActionDialogs';
import { JobMatrix } from '../components/JobMatrix';
import { Badge } from '../components/Badge';
import { useAnnounce } from '../components/Live';
import { OperatorButton } from '../components/OperatorButton';
import { RunOrAttempt } from '../components/RunOrAttempt';
import { type Column, Table } from '../components/Table';
import { formatTime, shortId } from '../format';
import { usePageTitle } from '../hooks';
import { Link } from '../router';
import { RESENDABLE_DISPATCH_STATUSES } from '../states';

type Evidence = AuditedPublication['evidence'][number];

const EVIDENCE_COLUMNS: Array<Column<Evidence>> = [
  { header: 'Job', cell: (e) => e.jobId },
  {
    header: 'Evidence',
    cell: (e) => {
      const own = e.attempts.find((a) => a.attempt === e.attempt && a.runId === e.runId);
      return (
        <>
          #{e.attempt} <RunOrAttempt runId={e.runId} source={own?.source} />
        </>
      );
    },
  },
  {
    header: 'Attempts for the date',
    cell: (e) => (
      <ul className="attempts">
        {e.attempts.map((a) => (
          <AttemptItem key={a.attempt} attempt={a} evidence={e.attempt} />
        ))}
      </ul>
    ),
  },
];

function callColumns(onResend: (d: GateDispatch) => void): Array<Column<GateDispatch>> {
  return [
    { header: 'Business date', cell: (d) => d.businessDate },
    { header: 'Decision', className: 'num', cell: (d) => `v${d.version}` },
    { header: 'Status', cell: (d) => <Badge status={d.status} /> },
    { header: 'Attempts', className: 'num', cell: (d) => d.attemptCount },
    { header: 'Last answer', className: 'message', cell: (d) => d.lastError ?? (d.lastHttpStatus ? `HTTP ${d.lastHttpStatus}` : '—') },
    { header: 'Created', cell: (d) => formatTime(d.createdAt) },
    {
      header: 'Actions',
      hiddenHeader: true,
      cell: (d) =>
        (RESENDABLE_DISPATCH_STATUSES as readonly string[]).includes(d.status) && (
          <OperatorButton onClick={() => onResend(d)}>Resend…</OperatorButton>
        ),
    },
  ];
}

/** An attempt of an evidence's job, as it stands to the evidence: superseded by it, the evidence, or newer. */
function AttemptItem({ attempt, evidence }: { attempt: Attempt; evidence: number }) {
  const relation = attempt.attempt < evidence ? 'superseded' : attempt.attempt > evidence ? 'newer' : 'evidence';
  const label = { superseded: 'superseded', evidence: 'the evidence', newer: 'newer: supersedes the evidence' }[relation];
  return (
    <li className={`attempt attempt-${relation}`} data-attempt={attempt.attempt} data-relation={relation}>
      {relation === 'superseded' ? <s>#{attempt.attempt}</s> : <span>#{attempt.attempt}</span>} <Badge status={attempt.state} />{' '}
      <RunOrAttempt runId={attempt.runId} source={attempt.source} /> <span className="muted">({label})</span>
    </li>
  );
}

/** One page of a gate's publications in a range; the last page shown offers the next. */
function PublicationsPage({ query, after, onMore }: { query: PublicationsQuery; after: string | null; onMore?(cursor: string): void }) {
  const { data, error } = useQuery(PUBLICATIONS, { ...query, after });
  const page = data?.publications;
  return (
    <>
      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}
      {page && after === null && page.nodes.length === 0 && <p className="muted">No publication in this range.</p>}
      {page?.nodes.map((p) => (
        <article
          key={p.businessDate}
          className="publication"
          data-publication={p.businessDate}
          aria-labelledby={`publication-${p.businessDate}`}
        >
          <h3 id={`publication-${p.businessDate}`}>{p.businessDate}</h3>
          <p>
            Published {formatTime(p.publishedAt)} by {p.publishedBy}; output <code>{p.outputHash.slice(0, 12)}</code>
          </p>
          <Table
            label={`Evidence of ${p.businessDate}`}
            rows={p.evidence}
            rowKey={(e) => e.jobId}
            rowProps={(e) => ({ 'data-evidence': e.jobId })}
            columns={EVIDENCE_COLUMNS}
            cards
          />
        </article>
      ))}
      {onMore && page?.pageInfo.hasNextPage && page.pageInfo.endCursor && (
        <button type="button" onClick={() => onMore(page.pageInfo.endCursor!)}>
          More publications
        </button>
      )}
    </>
  );
}

interface PublicationsQuery {
  consumer: string;
  from: string | null;
  to: string | null;
}

function Publications({ consumer }: { consumer: string }) {
  const [from, setFrom] = useState('');
  const [to, setTo] = useState('');
  /** The range shown, and the cursor of every page after the first that was asked for. */
  const [shown, setShown] = useState<{ query: PublicationsQuery; afters: string[] }>({
    query: { consumer, from: null, to: null },
    afters: [],
  });
  const ids = { from: useId(), to: useId() };

  useEffect(() => setShown({ query: { consumer, from: null, to: null }, afters: [] }), [consumer]);

  const filter = (event: FormEvent) => {
    event.preventDefault();
    setShown({ query: { consumer, from: from || null, to: to || null }, afters: [] });
  };
  const more = (cursor: string) => setShown((s) => ({ ...s, afters: [...s.afters, cursor] }));
  const pages = [null, ...shown.afters];

  return (
    <section aria-labelledby="publications-title">
      <h2 id="publications-title">Publications</h2>
      <form className="filters" onSubmit={filter} aria-label="Publications between business dates">
        <div>
          <label htmlFor={ids.from}>From</label>
          <input id={ids.from} type="date" value={from} onChange={(e) => setFrom(e.target.value)} />
        </div>
        <div>
          <label htmlFor={ids.to}>To</label>
          <input id={ids.to} type="date" value={to} onChange={(e) => setTo(e.target.value)} />
        </div>
        <div className="submit">
          <button type="submit">Show</button>
        </div>
      </form>
      {pages.map((after, index) => (
        <PublicationsPage
          key={`${JSON.stringify(shown.query)} ${after ?? ''}`}
          query={shown.query}
          after={after}
          onMore={index === pages.length - 1 ? more : undefined}
        />
      ))}
    </section>
  );
}

/** A gate: its definition, what it published with which evidence, and the calls to its receiver. */
export function GatePage({ consumer }: { consumer: string }) {
  const api = useApi();
  const announce = useAnnounce();
  const { data, error, reload } = useQuery(GATE, { consumer });
  usePageTitle(`Gate ${consumer}`);
  const gate = data?.gate;
  const [resending, setResending] = useState<GateDispatch | null>(null);

  if (gate === null) {
    return (
      <>
        <h1 tabIndex={-1}>No gate {consumer}</h1>
        <p>
          No gate is defined for this consumer. <Link to="/readiness">Check readiness</Link>.
        </p>
      </>
    );
  }
  return (
    <>
      <h1 tabIndex={-1}>Gate {consumer}</h1>
      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}
      {gate && (
        <section aria-labelledby="definition-title">
          <h2 id="definition-title">Definition</h2>
          <dl className="fields">
            <div className="field">
              <dt>Required jobs</dt>
              <dd>
                <ul className="plain">
                  {gate.requiredJobs.map((job) => {
                    const expected = gate.expectedBy.find((e) => e.jobId === job);
                    return (
                      <li key={job}>
                        {job}
                        {expected && <span className="muted"> — expected by {expected.text}</span>}
                      </li>
                    );
                  })}
                </ul>
              </dd>
            </div>
            <div className="field">
              <dt>Receiver</dt>
              <dd>{gate.notifyUrl ? <code className="wrap">{gate.notifyUrl}</code> : 'none'}</dd>
            </div>
            <div className="field">
              <dt>Holds back</dt>
              <dd>{gate.boundJobKey ?? '—'}</dd>
            </div>
            <div className="field">
              <dt>Defined</dt>
              <dd>
                {formatTime(gate.definedAt)} by {gate.definedBy}
              </dd>
            </div>
          </dl>
        </section>
      )}
      {gate && <JobMatrix consumer={consumer} />}
      <Publications consumer={consumer} />
      {gate && (
        <section aria-labelledby="calls-title">
          <h2 id="calls-title">Calls to the receiver</h2>
          {gate.dispatches.length === 0 ? (
            <p className="muted">No GATE_READY call.</p>
          ) : (
            <Table
              labelledBy="calls-title"
              rows={gate.dispatches}
              rowKey={(d) => d.dispatchId}
              rowProps={(d) => ({ 'data-dispatch': d.dispatchId })}
              columns={callColumns(setResending)}
              cards
            />
          )}
        </section>
      )}
      {resending && (
        <ReasonDialog
          title="Resend the call"
          confirmLabel="Resend"
          onClose={() => setResending(null)}
          onConfirm={async (reason) => {
            await api.request(RESEND_DISPATCH, { input: { dispatchId: resending.dispatchId, reason } });
            announce(`Call ${shortId(resending.dispatchId)} queued again.`);
            reload();
          }}
        >
          <p>
            Deliver decision v{resending.version} of {consumer} for {resending.businessDate} to the receiver again, with a fresh attempt
            budget?
          </p>
        </ReasonDialog>
      )}
    </>
  );
}
