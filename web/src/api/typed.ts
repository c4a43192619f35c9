// Typed requests and subscriptions: the session sends query text; these take gql.tada documents, so a page's
// variables and results are checked against the schema.
import type { ResultOf, VariablesOf } from 'gql.tada';
import { useCallback, useEffect, useMemo, useState } from 'react';
import { describeError } from './client';
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
  /** Reads again (after an action, or when events may have been missed). */
  reload(): void;
  /** Replaces the answer held (a subscription's newer one). */
  setData(data: ResultOf<D>): void;
}

/**
 * A query's answer for as long as the component shows it: read when the variables change (null: not read), when
 * `after` changes (something the answer depends on moved), and on reload. An answer to superseded variables is dropped.
 */
export function useQuery<D extends Document>(document: D, variables: VariablesOf<D> | null, after?: unknown): QueryState<D> {
  const api = useApi();
  const [data, setData] = useState<ResultOf<D> | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [reads, setReads] = useState(0);
  const key = variables === null ? null : JSON.stringify(variables);
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
      })
      .catch((e) => current && setError(describeError(e)));
    return () => {
      current = false;
    };
  }, [api, document, key, after, reads]);
  const reload = useCallback(() => setReads((n) => n + 1), []);
  return { data, error, reload, setData };
}
