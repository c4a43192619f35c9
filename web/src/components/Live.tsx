import { createContext, useCallback, useContext, useState, type ReactNode } from 'react';
import { formatClock } from '../format';
import { type LiveState, sinceOf } from '../hooks';
import { useLiveness } from '../session';

const AnnounceContext = createContext<(message: string) => void>(() => undefined);

/** A polite live region: screen readers hear what changed (an action done, an alert raised). */
export function Announcer({ children }: { children: ReactNode }) {
  const [message, setMessage] = useState('');
  const announce = useCallback((text: string) => {
    // a repeated message must still be read: clear first, then set
    setMessage('');
    requestAnimationFrame(() => setMessage(text));
  }, []);
  return (
    <AnnounceContext.Provider value={announce}>
      {children}
      <div className="visually-hidden" role="status" aria-live="polite">
        {message}
      </div>
    </AnnounceContext.Provider>
  );
}

export const useAnnounce = () => useContext(AnnounceContext);

/**
 * Whether what the page shows is being kept up to date, and since when it is not. A lost stream heals by itself
 * ("Reconnecting since …"); a subscription the server refused for good does not, and a reload (which also fetches the
 * console that matches an upgraded API) is offered.
 */
export function LiveIndicator({ state }: { state: LiveState }) {
  const since = formatClock(sinceOf(useLiveness()));
  const label =
    state === 'live'
      ? 'Live'
      : state === 'connecting'
        ? 'Connecting…'
        : state === 'reconnecting'
          ? `Reconnecting since ${since}`
          : state === 'stale'
            ? `Stale since ${since}`
            : 'Live updates stopped';
  return (
    <span className="live-wrap">
      <span className={`live live-${state}`} role="status" data-live={state}>
        <span aria-hidden="true" className="dot" />
        {label}
      </span>
      {state === 'failed' && (
        <button type="button" className="link" onClick={() => window.location.reload()}>
          Reload
        </button>
      )}
    </span>
  );
}
