// Typed requests and subscriptions: the session sends query text; these take gql.tada documents, so a page's
// variables and results are checked against the schema.
import type { ResultOf, VariablesOf } from 'gql.tada';
import { type Dispatch, type SetStateAction, useCallback, useEffect, useMemo, useState } from 'react';
import { ApiError, describeError } from './client';
import { type LiveState, useSubscription } from '../hooks';
import { useSession } from '../session';
import { type Document, documentText } from '../../../schema/documents/graphql.js';

interface Api {
  request<D extends Document>(document: D, variables?: VariablesOf<D>): Promise<ResultOf<D>>;
}

/** The signed-in session's requests, typed by the document they send. */
export function useApi(): Api {
  const session = useSession();
  return useMemo(
    () => ({
      request: <D extends Document>(document: D, variables?: VariablesOf<D>) =>
        session.request<ResultOf<D>>(documentText(document), variables as Record<string, unknown> | undefined),
    }),
    [session],
  );
}

/** useSubscription for a typed document (`variables` null: not subscribed). */
export function useLive<D extends Document>(
  document: D,
  variables: VariablesOf<D> | null,
  handlers: Parameters<typeof useSubscription<ResultOf<D>>>[2],
): LiveState {
  return useSubscription<ResultOf<D>>(documentText(document), variables as Record<string, unknown> | null, handlers);
}

export interface QueryState<D extends Document> {
  /** The last answer (kept while a new read is under way or has failed); null before the first. */
  data: ResultOf<D> | null;
  /** Why the last read failed, as a person should read it; null once one succeeds. */
  error: string | null;
  /** The contract's code of that failure (RUN_NOT_FOUND, …), when the server answered one. */
  errorCode: string | null;
  /** The answer held (data or error) is to the read asked for now: not to earlier variables, nor before a reload. */
  current: boolean;
  /** Reads again (after an action, or when events may have been missed). */
  reload(): void;
  /** Replaces the answer held, or changes it (with a subscription's newer part). */
  setData: Dispatch<SetStateAction<ResultOf<D> | null>>;
}

/**
 * A query's answer for as long as the component shows it: read when the variables change (null: not read), when
 * `after` changes (something the answer depends on moved), and on reload. An answer to superseded variables is dropped.
 */
export function useQuery<D extends Document>(document: D, variables: VariablesOf<D> | null, after?: unknown): QueryState<D> {
  const api = useApi();
  const [data, setData] = useState<ResultOf<D> | null>(null);
  const [error, setError] = useState<{ text: string; code: string | null } | null>(null);
  const [reads, setReads] = useState(0);
  /** Which read the answer held is to. */
  const [answered, setAnswered] = useState<string | null>(null);
  const key = variables === null ? null : JSON.stringify(variables);
  const asked = JSON.stringify([key, after ?? null, reads]);
  // biome-ignore lint/correctness/useExhaustiveDependencies: the variables are compared by their text; `after` and `reads` ask for a new read
  useEffect(() => {
    if (key === null) return;
    let current = true;
    api
      .request(document, JSON.parse(key))
      .then((answer) => {
        if (!current) return;
        setData(answer);
        setError(null);
        setAnswered(asked);
      })
      .catch((e) => {
        if (!current) return;
        setError({ text: describeError(e), code: e instanceof ApiError ? e.code : null });
        setAnswered(asked);
      });
    return () => {
      current = false;
    };
  }, [api, document, key, after, reads]);
  const reload = useCallback(() => setReads((n) => n + 1), []);
  return { data, error: error?.text ?? null, errorCode: error?.code ?? null, current: answered === asked, reload, setData };
}
