import { createContext, useCallback, useContext, useState, type ReactNode } from 'react';
import type { LiveState } from '../hooks';

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

const LABELS: Record<LiveState, string> = {
  connecting: 'Connecting…',
  live: 'Live',
  reconnecting: 'Reconnecting…',
  failed: 'Live updates stopped',
};

/** Whether what the page shows is being kept up to date. */
export function LiveIndicator({ state }: { state: LiveState }) {
  return (
    <span className={`live live-${state}`}>
      <span aria-hidden="true" className="dot" />
      {LABELS[state]}
    </span>
  );
}
