import { useEffect, useLayoutEffect, useRef, useState } from 'react';
import type { ResultOf } from 'gql.tada';
import type { ApiError } from './api/client';
import { RUN_PROGRESS } from './api/live';
import { documentText } from '../../schema/documents/graphql.js';
import { type Liveness, useLiveness, useSession } from './session';

/** What a stream's data is worth now: kept up to date, not yet, no longer (stale since), or given up. */
export type LiveState = 'connecting' | 'live' | 'stale' | 'reconnecting' | 'failed';

const SEVERITY: LiveState[] = ['live', 'connecting', 'stale', 'reconnecting', 'failed'];

/** The state of a page with several streams: its least healthy one. */
export const worst = (...states: LiveState[]): LiveState =>
  states.reduce((a, b) => (SEVERITY.indexOf(b) > SEVERITY.indexOf(a) ? b : a), 'live');

/** The tab's state: its one event stream, and whether the server behind it still hears changes. */
function stateOf(liveness: Liveness): LiveState {
  if (liveness.connection.status !== 'live') return liveness.connection.status;
  return liveness.server && !liveness.server.live ? 'stale' : 'live';
}

/** When the tab's current state began (ms), for "Reconnecting since" and "Stale since". */
export function sinceOf(liveness: Liveness): number {
  if (liveness.connection.status !== 'live') return liveness.connection.since;
  return liveness.server && !liveness.server.live ? liveness.server.since : liveness.connection.since;
}

/** Calls `resync` whenever events may have been missed (a re-opened stream, the server live again). */
function useResync(resync: (() => void) | undefined): void {
  const { epoch } = useLiveness();
  const latest = useRef(resync);
  useLayoutEffect(() => {
    latest.current = resync;
  });
  const seen = useRef(epoch);
  useEffect(() => {
    if (epoch === seen.current) return;
    seen.current = epoch;
    latest.current?.();
  }, [epoch]);
}

interface Handlers<T> {
  onData(data: T): void;
  /** Events may have been missed (`reconnected` true): re-read what the page shows. */
  onConnected?(reconnected: boolean): void;
  onError?(error: ApiError): void;
}

/**
 * A GraphQL subscription (on the tab's one stream) for as long as the component shows it; returns its state. A new
 * `generation` subscribes again.
 */
export function useSubscription<T>(
  query: string,
  variables: Record<string, unknown> | null,
  handlers: Handlers<T>,
  generation = 0,
): LiveState {
  const session = useSession();
  const liveness = useLiveness();
  /** Refused for good: the stream under it heals, this subscription does not. */
  const [ended, setEnded] = useState(false);
  const latest = useRef(handlers);
  useLayoutEffect(() => {
    latest.current = handlers;
  });
  useResync(() => latest.current.onConnected?.(true));
  const key = variables ? JSON.stringify(variables) : null;

  // biome-ignore lint/correctness/useExhaustiveDependencies: a new generation is what re-subscribes
  useEffect(() => {
    if (key === null) return;
    setEnded(false);
    // disposing a subscription completes it: callbacks of a disposed one must not touch the state
    let active = true;
    const dispose = session.subscriptions.subscribe<T>(
      { query, variables: JSON.parse(key) },
      {
        next(data) {
          if (active) latest.current.onData(data);
        },
        refused(error) {
          if (!active) return;
          latest.current.onError?.(error);
          setEnded(true);
        },
      },
    );
    return () => {
      active = false;
      dispose();
    };
  }, [session, query, key, generation]);

  return ended ? 'failed' : stateOf(liveness);
}

type ProgressEvent = NonNullable<ResultOf<typeof RUN_PROGRESS>['runProgress']>;

/** A run's progress as runProgress's deltas merged: the run row, its counts and every partition, in partition order. */
export type RunProgressState = Omit<ProgressEvent, 'sinceVersion' | 'snapshot'>;

/** The event applied to the state, or null when it does not follow the version held (one was missed). */
function applyProgress(state: RunProgressState | null, event: ProgressEvent): RunProgressState | null {
  const { version, run, partitionCounts } = event;
  if (event.snapshot) return { version, run, partitionCounts, partitions: event.partitions };
  if (!state || event.sinceVersion !== state.version) return null;
  const partitions = [...state.partitions];
  const index = new Map(partitions.map((p, i) => [p.partitionId, i]));
  for (const p of event.partitions) {
    const at = index.get(p.partitionId);
    if (at === undefined) partitions.push(p);
    else partitions[at] = p;
  }
  if (partitions.length > state.partitions.length) partitions.sort((a, b) => a.partitionId.localeCompare(b.partitionId));
  return { version, run, partitionCounts, partitions };
}

/**
 * runProgress for as long as the component shows the run: a snapshot, then deltas merged into it. A delta that does
 * not follow the version held (one was missed) subscribes again, which starts with a snapshot; so does a re-opened
 * stream. `onRunChanged` hears of every event whose delta is empty: a transition, dispatch, metric or event of the
 * run (those are not part of the progress).
 */
export function useRunProgress(runId: string | null, onRunChanged?: () => void): { progress: RunProgressState | null; live: LiveState } {
  const [progress, setProgress] = useState<RunProgressState | null>(null);
  const [attempt, setAttempt] = useState(0);
  const held = useRef<RunProgressState | null>(null);
  const latest = useRef(onRunChanged);
  useLayoutEffect(() => {
    latest.current = onRunChanged;
  });
  const live = useSubscription<ResultOf<typeof RUN_PROGRESS>>(
    documentText(RUN_PROGRESS),
    runId ? { runId } : null,
    {
      onData: ({ runProgress: event }) => {
        if (!event) return;
        const next = applyProgress(held.current, event);
        if (!next) {
          held.current = null;
          setAttempt((n) => n + 1);
          return;
        }
        held.current = next;
        setProgress(next);
        if (!event.snapshot && event.partitions.length === 0) latest.current?.();
      },
      onConnected: () => latest.current?.(),
    },
    attempt,
  );
  return { progress, live };
}

/** Re-renders every `ms` (elapsed times). */
export function useNow(ms = 1000): number {
  const [now, setNow] = useState(Date.now);
  useEffect(() => {
    const timer = setInterval(() => setNow(Date.now()), ms);
    return () => clearInterval(timer);
  }, [ms]);
  return now;
}

/** The tab's title, as the page's heading says it: a history of tabs and bookmarks that tells pages apart. */
export function usePageTitle(title: string): void {
  useEffect(() => {
    document.title = `${title} · Load Control`;
  }, [title]);
}
