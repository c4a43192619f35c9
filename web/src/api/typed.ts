// Typed requests and subscriptions: the session sends query text; these take gql.tada documents, so a page's
// variables and results are checked against the schema.
import type { ResultOf, TadaDocumentNode, VariablesOf } from 'gql.tada';
import { useMemo } from 'react';
import { type LiveState, useSubscription } from '../hooks';
import { useSession } from '../session';
import { documentText } from './operations';

// any: a document's variables are a parameter type, so no narrower bound accepts every document
// biome-ignore lint/suspicious/noExplicitAny: see above
type Document = TadaDocumentNode<any, any>;

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
