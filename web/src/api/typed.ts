// Typed requests and subscriptions: the session sends query text; these take gql.tada documents, so a page's
// variables and results are checked against the schema.
import type { ResultOf, VariablesOf } from 'gql.tada';
import { useMemo } from 'react';
import { type LiveState, useSubscription } from '../hooks';
import { useSession } from '../session';
import { type Document, documentText } from '../../../documents/graphql.js';

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
