import { useId, useState } from 'react';
import { ALERT_KINDS, ALERT_SEVERITIES } from '../../../src/config/alert-kinds.js';
import { causeLabel, causePath, kindLabel } from '../alert-groups';
import type { Alert, AlertGroup } from '../api/operations';
import { count, formatTime, shortId } from '../format';
import { Link } from '../router';
import { Badge } from './Badge';
import { OperatorButton } from './OperatorButton';
import { type Column, Table } from './Table';

export type AlertGroupAction =
  | { kind: 'acknowledge'; group: AlertGroup }
  | { kind: 'snooze'; group: AlertGroup }
  | { kind: 'resend'; alert: Alert }
  | { kind: 'resolve'; alert: Alert };

/** What an operator said of the group: acknowledged (and whether anything came since), snoozed, or nothing yet. */
function GroupState({ group }: { group: AlertGroup }) {
  const { acknowledgement: ack, snooze } = group;
  return (
    <>
      {snooze && (
        <p className="group-state">
          <Badge status="SNOOZED" label="Snoozed" /> until {formatTime(snooze.until)} by {snooze.by}: <q>{snooze.note}</q>
        </p>
      )}
      {ack && (
        <p className="group-state">
          {group.acknowledged ? (
            <Badge status="ACKED" label="Acknowledged" />
          ) : (
            <Badge status="ERROR" label={`${group.unacknowledgedCount} new`} />
          )}{' '}
          {group.acknowledged ? '' : 'since acknowledged '}by {ack.by} at {formatTime(ack.at)}: <q>{ack.note}</q>
        </p>
      )}
      {!ack && !snooze && <span className="muted">Open</span>}
    </>
  );
}

/** The newest alert's run, or what it is about when it has none (a job and business date, a gate's date). */
function LatestSubject({ alert }: { alert: Alert }) {
  if (alert.runId)
    return (
      <Link to={`/runs/${alert.runId}`} aria-label={`Run ${alert.runId}`}>
        {shortId(alert.runId)}
      </Link>
    );
  const about = [alert.jobKey, alert.businessKey].filter(Boolean).join(' / ');
  return about ? <span>{about}</span> : <span className="muted">—</span>;
}

function groupColumns(act: (action: AlertGroupAction) => void): Array<Column<AlertGroup>> {
  return [
    { header: 'Level', cell: (g) => <Badge status={g.severity} /> },
    { header: 'Alert', rowHeader: true, cell: (g) => g.kind.replaceAll('_', ' ') },
    {
      header: 'Cause',
      cell: (g) => {
        const path = causePath(g);
        return path ? <Link to={path}>{causeLabel(g)}</Link> : causeLabel(g);
      },
    },
    { header: 'Count', className: 'num', cell: (g) => count(g.count) },
    { header: 'First', cell: (g) => formatTime(g.firstAt) },
    { header: 'Last', cell: (g) => formatTime(g.lastAt) },
    { header: 'Latest', title: 'The newest alert’s run, or what it is about', cell: (g) => <LatestSubject alert={g.latest} /> },
    { header: 'Message', className: 'message', title: 'The newest alert’s message', cell: (g) => g.latest.message ?? '—' },
    { header: 'State', cell: (g) => <GroupState group={g} /> },
    {
      header: 'Actions',
      hiddenHeader: true,
      cell: (g) => (
        <span className="row-actions">
          {!g.acknowledged && (
            <OperatorButton
              onClick={() => act({ kind: 'acknowledge', group: g })}
              aria-label={`Acknowledge ${kindLabel(g.kind)} of ${causeLabel(g)}`}
            >
              Acknowledge…
            </OperatorButton>
          )}
          <OperatorButton onClick={() => act({ kind: 'snooze', group: g })} aria-label={`Snooze ${kindLabel(g.kind)} of ${causeLabel(g)}`}>
            Snooze…
          </OperatorButton>
          {g.latest.kind === 'DISPATCH_DEAD' && g.latest.dispatchId && (
            <OperatorButton onClick={() => act({ kind: 'resend', alert: g.latest })}>Resend…</OperatorButton>
          )}
          {g.latest.kind === 'PUBLISH_UNKNOWN' && g.latest.status === 'PUBLISH_UNKNOWN' && (
            <OperatorButton onClick={() => act({ kind: 'resolve', alert: g.latest })}>Resolve…</OperatorButton>
          )}
        </span>
      ),
    },
  ];
}

/**
 * The alerts present now, one row per kind and cause (a broken webhook receiver is one row however many of its
 * webhooks died), filtered by kind and level; snoozed groups only on request.
 */
export function AlertGroups({
  groups,
  alertCount,
  act,
}: {
  groups: AlertGroup[] | null;
  alertCount: number | null;
  act(action: AlertGroupAction): void;
}) {
  const [kind, setKind] = useState('');
  const [level, setLevel] = useState('');
  const [showSnoozed, setShowSnoozed] = useState(false);
  const ids = { kind: useId(), level: useId(), snoozed: useId() };
  const snoozed = groups?.filter((g) => g.snooze).length ?? 0;
  const shown = (groups ?? []).filter((g) => (showSnoozed || !g.snooze) && (!kind || g.kind === kind) && (!level || g.severity === level));
  return (
    <section aria-labelledby="alerts-title">
      <h2 id="alerts-title">
        Alerts{' '}
        <span className="muted">
          ({groups ? `${count(groups.length - snoozed)} groups, ${count(alertCount ?? 0)} alerts` : '—'}
          {snoozed > 0 && `, ${snoozed} snoozed`})
        </span>
      </h2>
      <div className="alert-filters">
        <label htmlFor={ids.kind} className="alert-filter">
          Kind
          <select id={ids.kind} value={kind} onChange={(e) => setKind(e.target.value)}>
            <option value="">Every kind</option>
            {ALERT_KINDS.map((k) => (
              <option key={k} value={k}>
                {kindLabel(k)}
              </option>
            ))}
          </select>
        </label>
        <label htmlFor={ids.level} className="alert-filter">
          Level
          <select id={ids.level} value={level} onChange={(e) => setLevel(e.target.value)}>
            <option value="">Every level</option>
            {ALERT_SEVERITIES.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </label>
        <label htmlFor={ids.snoozed} className="alert-filter inline">
          <input id={ids.snoozed} type="checkbox" checked={showSnoozed} onChange={(e) => setShowSnoozed(e.target.checked)} />
          Show snoozed ({snoozed})
        </label>
      </div>
      {groups && shown.length === 0 ? (
        <p className="muted">{groups.length === 0 ? 'No alerts.' : 'No alerts match these filters.'}</p>
      ) : (
        <Table
          labelledBy="alerts-title"
          rows={shown}
          rowKey={(g) => g.groupKey}
          rowProps={(g) => ({ className: g.severity === 'ERROR' && !g.acknowledged ? 'row-error' : undefined, 'data-group': g.groupKey })}
          columns={groupColumns(act)}
          cards
        />
      )}
    </section>
  );
}
