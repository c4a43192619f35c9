import { createContext, useCallback, useContext, useEffect, useMemo, useState, type ReactNode } from 'react';
import { ApiError, type Connection, type Credential, createSubscriptions, request, type Subscriptions } from './api/client';
import { REALTIME_STATUS } from './api/live';
import { documentText } from '../../schema/documents/graphql.js';

const KEY = 'lc.token';

export interface Session {
  request<T>(query: string, variables?: Record<string, unknown>): Promise<T>;
  subscriptions: Subscriptions;
  signOut(reason?: string): void;
}

/** Whether what the tab shows is kept up to date. */
export interface Liveness {
  connection: Connection;
  /** The server's realtimeStatus: false while it hears no changes (a database outage); null until known. */
  server: { live: boolean; since: number } | null;
  /** One more whenever events may have been missed (a re-opened stream, the server live again): views re-read. */
  epoch: number;
}

const UNAUTHORIZED = 'The token is no longer accepted: sign in again.';
const LivenessContext = createContext<Liveness | null>(null);

interface SessionState {
  session: Session | null;
  /** Why the last session ended, shown on the sign-in page. */
  notice: string | null;
  signIn(token: string, remember: boolean): void;
  /** The server signs people in through the organization's OpenID provider (/auth/login). */
  providerSignIn: boolean;
  /** Where `start` keeps the development tokens it made (embedded database only), else null. */
  devTokensFile: string | null;
}

/** What GET /auth/session answers: whether sign-in through the provider is offered, and the session the cookie names. */
interface ServerSession {
  signIn: boolean;
  session: { name: string; roles: string[]; csrfToken: string } | null;
  devTokensFile?: string | null;
}

/** Ends the cookie's session here and answers where to end it at the provider too (null: nowhere). */
async function endServerSession(csrfToken: string): Promise<string | null> {
  try {
    const response = await fetch('/auth/logout', { method: 'POST', headers: { 'X-CSRF-Token': csrfToken } });
    return response.ok ? ((await response.json()) as { endSessionUrl: string | null }).endSessionUrl : null;
  } catch {
    return null;
  }
}

const SessionContext = createContext<SessionState | null>(null);

function storedToken(): string | null {
  return sessionStorage.getItem(KEY) ?? localStorage.getItem(KEY);
}

/**
 * A token lives in this tab (sessionStorage) unless the person asked to be remembered on this device; a person
 * signed in through the provider has a session cookie the page never sees, and its CSRF token from /auth/session.
 */
export function SessionProvider({ children }: { children: ReactNode }) {
  const [credential, setCredential] = useState<Credential | null>(() => {
    const token = storedToken();
    return token ? { token } : null;
  });
  const [notice, setNotice] = useState<string | null>(null);
  const [providerSignIn, setProviderSignIn] = useState(false);
  const [devTokensFile, setDevTokensFile] = useState<string | null>(null);

  useEffect(() => {
    let current = true;
    fetch('/auth/session', { headers: { Accept: 'application/json' } })
      .then((response) => (response.ok ? (response.json() as Promise<ServerSession>) : null))
      .then((answer) => {
        if (!current || !answer) return;
        setProviderSignIn(answer.signIn);
        setDevTokensFile(answer.devTokensFile ?? null);
        if (answer.session) setCredential((old) => old ?? { csrfToken: answer.session!.csrfToken });
      })
      .catch(() => undefined);
    return () => {
      current = false;
    };
  }, []);

  /** With a reason: the server refused the credential (nothing to end). Without: the person signs out, at the provider too. */
  const signOut = useCallback(
    (reason?: string) => {
      sessionStorage.removeItem(KEY);
      localStorage.removeItem(KEY);
      setNotice(reason ?? null);
      setCredential(null);
      if (!reason && credential && 'csrfToken' in credential) {
        void endServerSession(credential.csrfToken).then((endSessionUrl) => {
          if (endSessionUrl) window.location.assign(endSessionUrl);
        });
      }
    },
    [credential],
  );

  const signIn = useCallback((value: string, remember: boolean) => {
    (remember ? localStorage : sessionStorage).setItem(KEY, value);
    setNotice(null);
    setCredential({ token: value });
  }, []);

  // made and disposed by an effect, so a client is never disposed while still in use (StrictMode re-runs effects)
  const [subscriptions, setSubscriptions] = useState<Subscriptions | null>(null);
  const [connection, setConnection] = useState<Connection>({ status: 'connecting', since: Date.now(), reopened: 0 });
  const [server, setServer] = useState<{ live: boolean; since: number; recovered: number } | null>(null);
  useEffect(() => {
    if (!credential) {
      setSubscriptions(null);
      return;
    }
    const client = createSubscriptions(credential, { onConnection: setConnection, onUnauthorized: () => signOut(UNAUTHORIZED) });
    setSubscriptions(client);
    // held for as long as the session: it keeps the tab's one stream open and says when the server goes stale
    const dispose = client.subscribe<{ realtimeStatus: { live: boolean; since: string } }>(
      { query: documentText(REALTIME_STATUS) },
      {
        next: (data) => {
          if (!data.realtimeStatus) return;
          const { live, since } = data.realtimeStatus;
          setServer((old) => ({
            live,
            since: Date.parse(since),
            recovered: (old?.recovered ?? 0) + (live && old && !old.live ? 1 : 0),
          }));
        },
        // the page's own subscriptions show a refusal (and offer the reload)
        refused: () => undefined,
      },
    );
    return () => {
      dispose();
      client.dispose();
    };
  }, [credential, signOut]);
  const liveness = useMemo<Liveness>(
    () => ({
      connection,
      server: server && { live: server.live, since: server.since },
      epoch: connection.reopened + (server?.recovered ?? 0),
    }),
    [connection, server],
  );

  const session = useMemo<Session | null>(() => {
    if (!credential || !subscriptions) return null;
    return {
      subscriptions,
      signOut,
      async request<T>(query: string, variables?: Record<string, unknown>) {
        try {
          return await request<T>(credential, query, variables);
        } catch (error) {
          if (error instanceof ApiError && error.code === 'UNAUTHENTICATED') signOut(UNAUTHORIZED);
          throw error;
        }
      },
    };
  }, [credential, subscriptions, signOut]);

  const state = useMemo(
    () => ({ session, notice, signIn, providerSignIn, devTokensFile }),
    [session, notice, signIn, providerSignIn, devTokensFile],
  );
  return (
    <SessionContext.Provider value={state}>
      <LivenessContext.Provider value={liveness}>{children}</LivenessContext.Provider>
    </SessionContext.Provider>
  );
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

/** The tab's liveness (for pages and the live indicator). */
export function useLiveness(): Liveness {
  const liveness = useContext(LivenessContext);
  if (!liveness) throw new Error('SessionProvider missing');
  return liveness;
}
