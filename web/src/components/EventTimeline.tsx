import type { VariablesOf } from 'gql.tada';
import { useState } from 'react';
import { RUN_EVENT_PAGE } from '../../../schema/documents/operator.js';
import { useQuery } from '../api/typed';
import { formatTime } from '../format';
import { Badge } from './Badge';

const PAGE = 50;
const LEVELS = ['INFO', 'WARN', 'ERROR'] as const;

interface Filter {
  minLevel: (typeof LEVELS)[number] | '';
  name: string;
  partitionId: string;
  operatorActions: boolean;
}

const NO_FILTER: Filter = { minLevel: '', name: '', partitionId: '', operatorActions: false };

/**
 * A run's events, newest first, a page at a time (older pages by cursor), filtered by level, kind, partition or
 * operator actions. `changed` is something that moves when the run gets a new event: the first page reads again.
 */
export function EventTimeline({ runId, changed }: { runId: string; changed: unknown }) {
  const [filter, setFilter] = useState<Filter>(NO_FILTER);
  const [draft, setDraft] = useState<Filter>(NO_FILTER);
  /** The cursors of the pages before the one shown: the first page's is null. */
  const [cursors, setCursors] = useState<Array<string | null>>([null]);
  const after = cursors.at(-1) ?? null;
  const variables: VariablesOf<typeof RUN_EVENT_PAGE> = {
    runId,
    first: PAGE,
    after,
    minLevel: filter.minLevel || null,
    name: filter.name || null,
    partitionId: filter.partitionId || null,
    operatorActions: filter.operatorActions || null,
  };
  // only the first page follows the run: an older page stays as it was read
  const { data, error, current } = useQuery(RUN_EVENT_PAGE, variables, after === null ? changed : null);
  const page = data?.run?.eventPage ?? null;
  const kinds = [...new Set(page?.nodes.map((e) => e.name) ?? [])].sort();
  const apply = (next: Filter) => {
    setFilter(next);
    setCursors([null]);
  };

  return (
    <section aria-labelledby="events-title">
      <h2 id="events-title">
        Events <span className="muted">(newest first)</span>
      </h2>
      <form
        className="filters"
        role="search"
        aria-label="Filter events"
        onSubmit={(e) => {
          e.preventDefault();
          apply({ ...draft, name: draft.name.trim().toUpperCase(), partitionId: draft.partitionId.trim() });
        }}
      >
        <label>
          Level
          <select value={draft.minLevel} onChange={(e) => setDraft({ ...draft, minLevel: e.target.value as Filter['minLevel'] })}>
            <option value="">any</option>
            {LEVELS.map((level) => (
              <option key={level} value={level}>
                {level} and above
              </option>
            ))}
          </select>
        </label>
        <label>
          Kind
          <input
            value={draft.name}
            list="event-kinds"
            maxLength={80}
            placeholder="e.g. RUN_FAILED"
            onChange={(e) => setDraft({ ...draft, name: e.target.value })}
          />
          <datalist id="event-kinds">
            {kinds.map((kind) => (
              <option key={kind} value={kind} />
            ))}
          </datalist>
        </label>
        <label>
          Partition
          <input value={draft.partitionId} maxLength={40} onChange={(e) => setDraft({ ...draft, partitionId: e.target.value })} />
        </label>
        <span className="check">
          <input
            id="events-operator"
            type="checkbox"
            checked={draft.operatorActions}
            onChange={(e) => setDraft({ ...draft, operatorActions: e.target.checked })}
          />
          <label htmlFor="events-operator">Operator actions only</label>
        </span>
        <button type="submit">Filter</button>
        {filter !== NO_FILTER && (
          <button
            type="button"
            onClick={() => {
              setDraft(NO_FILTER);
              apply(NO_FILTER);
            }}
          >
            Clear
          </button>
        )}
      </form>
      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}
      {!page && !error && <p className="muted">Loading…</p>}
      {page && page.nodes.length === 0 && current && <p className="muted">{filter === NO_FILTER ? 'No events.' : 'No event matches.'}</p>}
      {page && page.nodes.length > 0 && (
        <ol className="timeline" aria-busy={!current} data-events-page={cursors.length}>
          {page.nodes.map((e) => (
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
      <nav className="pager" aria-label="Pages of events">
        {cursors.length > 1 && (
          <button type="button" onClick={() => setCursors(cursors.slice(0, -1))}>
            Newer events
          </button>
        )}
        {page?.pageInfo.hasNextPage && page.pageInfo.endCursor && (
          <button type="button" onClick={() => setCursors([...cursors, page.pageInfo.endCursor])}>
            Older events
          </button>
        )}
      </nav>
    </section>
  );
}
