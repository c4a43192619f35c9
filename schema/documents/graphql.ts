// The API's GraphQL documents are written once, here, and typed from schema/schema.graphql by gql.tada:
// schema/documents/graphql-env.d.ts is the schema's introspection (`npm run schema` writes it; test/process/documents.test.ts
// fails when it is stale or a document does not validate against the schema). The console, the simulator, the
// benchmarks and the tests import them; the NiFi kit's calls (schema/documents/nifi.ts) are written from nifi/requests.
import { print } from '@0no-co/graphql.web';
import { initGraphQLTada, type TadaDocumentNode } from 'gql.tada';
import type { introspection } from './graphql-env.d.ts';

export const graphql = initGraphQLTada<{
  introspection: introspection;
  // what the server sends (src/graphql/scalars.ts): Long is a JSON number, or a string of digits beyond 2^53
  scalars: { DateTime: string; Date: string; UUID: string; Long: number | string; Decimal: string; JSON: Record<string, unknown> };
  disableMasking: true;
}>();

// any: a document's variables are a parameter type, so no narrower bound accepts every document
// biome-ignore lint/suspicious/noExplicitAny: see above
export type Document = TadaDocumentNode<any, any>;

const texts = new WeakMap<Document, string>();

/** A document's text as sent to the API, printed once. */
export function documentText(document: Document | string): string {
  if (typeof document === 'string') return document;
  let text = texts.get(document);
  if (text === undefined) {
    text = print(document);
    texts.set(document, text);
  }
  return text;
}
