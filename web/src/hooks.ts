import { useEffect, useLayoutEffect, useRef, useState } from 'react';
import { ApiError } from './api/client';
import { useSession } from './session';

export type LiveState = 'connecting' | 'live' | 'reconnecting' | 'failed';

const SEVERITY: LiveState[] = ['live', 'connecting', 'reconnecting', 'failed'];

/** The state of a page with several streams: its least healthy one. */
export const worst = (...states: LiveState[]): LiveState =>
  states.reduce((a, b) => (SEVERITY.indexOf(b) > SEVERITY.indexOf(a) ? b : a), 'live');

interface Handlers<T> {
  onData(data: T): void;
  /** The stream (re)opened; `reconnected` means events may have been missed meanwhile: re-read. */
  onConnected?(reconnected: boolean): void;
  onError?(error: ApiError): void;
}

/** A GraphQL subscription for as long as the component shows it; returns the stream's state. */
export function useSubscription<T>(query: string, variables: Record<string, unknown> | null, handlers: Handlers<T>): LiveState {
  const session = useSession();
  const [state, setState] = useState<LiveState>('connecting');
  const latest = useRef(handlers);
  useLayoutEffect(() => {
    latest.current = handlers;
  });
  const key = variables ? JSON.stringify(variables) : null;

  useEffect(() => {
    if (key === null) return;
    setState('connecting');
    // disposing a subscription completes it: callbacks of a disposed one must not touch the state
    let active = true;
    const dispose = session.subscriptions.subscribe<T>(
      { query, variables: JSON.parse(key) },
      {
        next(result) {
          if (!active) return;
          const first = result.errors?.[0] as
            | { message: string; extensions?: { code?: string; details?: Record<string, unknown> } }
            | undefined;
          if (first)
            latest.current.onError?.(new ApiError(first.extensions?.code ?? 'ERROR', first.message, 200, first.extensions?.details));
          else if (result.data) latest.current.onData(result.data);
        },
        error() {
          if (active) setState('failed');
        },
        complete() {
          if (active) setState('failed');
        },
      },
      {
        connecting: (reconnecting) => active && setState(reconnecting ? 'reconnecting' : 'connecting'),
        connected: (reconnected) => {
          if (!active) return;
          setState('live');
          latest.current.onConnected?.(reconnected);
        },
      },
    );
    return () => {
      active = false;
      dispose();
    };
  }, [session, query, key]);

  return state;
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
