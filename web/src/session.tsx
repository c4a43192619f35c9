import { createContext, useCallback, useContext, useEffect, useMemo, useState, type ReactNode } from 'react';
import type { Client } from 'graphql-sse';
import { ApiError, createSubscriptions, request } from './api/client';

const KEY = 'lc.token';

export interface Session {
  request<T>(query: string, variables?: Record<string, unknown>): Promise<T>;
  subscriptions: Client;
  signOut(reason?: string): void;
}

interface SessionState {
  session: Session | null;
  /** Why the last session ended, shown on the sign-in page. */
  notice: string | null;
  signIn(token: string, remember: boolean): void;
}

const SessionContext = createContext<SessionState | null>(null);

function storedToken(): string | null {
  return sessionStorage.getItem(KEY) ?? localStorage.getItem(KEY);
}

/** The token lives in this tab (sessionStorage) unless the person asked to be remembered on this device. */
export function SessionProvider({ children }: { children: ReactNode }) {
  const [token, setToken] = useState<string | null>(storedToken);
  const [notice, setNotice] = useState<string | null>(null);

  const signOut = useCallback((reason?: string) => {
    sessionStorage.removeItem(KEY);
    localStorage.removeItem(KEY);
    setNotice(reason ?? null);
    setToken(null);
  }, []);

  const signIn = useCallback((value: string, remember: boolean) => {
    (remember ? localStorage : sessionStorage).setItem(KEY, value);
    setNotice(null);
    setToken(value);
  }, []);

  // made and disposed by an effect, so a client is never disposed while still in use (StrictMode re-runs effects)
  const [subscriptions, setSubscriptions] = useState<Client | null>(null);
  useEffect(() => {
    if (!token) {
      setSubscriptions(null);
      return;
    }
    const client = createSubscriptions(token);
    setSubscriptions(client);
    return () => client.dispose();
  }, [token]);

  const session = useMemo<Session | null>(() => {
    if (!token || !subscriptions) return null;
    return {
      subscriptions,
      signOut,
      async request<T>(query: string, variables?: Record<string, unknown>) {
        try {
          return await request<T>(token, query, variables);
        } catch (error) {
          if (error instanceof ApiError && error.code === 'UNAUTHENTICATED') signOut('The token is no longer accepted: sign in again.');
          throw error;
        }
      },
    };
  }, [token, subscriptions, signOut]);

  const state = useMemo(() => ({ session, notice, signIn }), [session, notice, signIn]);
  return <SessionContext.Provider value={state}>{children}</SessionContext.Provider>;
}

export function useSessionState(): SessionState {
  const state = useContext(SessionContext);
  if (!state) throw new Error('SessionProvider missing');
  return state;
}

/** The signed-in session (pages render only when there is one). */
export function useSession(): Session {
  const { session } = useSessionState();
  if (!session) throw new Error('not signed in');
  return session;
}
