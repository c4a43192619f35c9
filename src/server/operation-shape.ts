import { maxAliasesPlugin } from '@escape.tech/graphql-armor-max-aliases';
import { maxDepthPlugin } from '@escape.tech/graphql-armor-max-depth';
import { maxTokensPlugin } from '@escape.tech/graphql-armor-max-tokens';
import {
  GraphQLError,
  Kind,
  type DocumentNode,
  type FragmentDefinitionNode,
  type OperationDefinitionNode,
  type SelectionSetNode,
} from 'graphql';
import type { Plugin } from 'graphql-yoga';

/** What a document may hold, checked while parsing and validating (useDocumentLimits). */
export const DOCUMENT_LIMITS = { tokens: 5000, depth: 20, aliases: 20 } as const;

/**
 * Fields an operation may select once every fragment spread is expanded. A document within the token limit
 * has at most a few thousand fields as written; fragments spread several times each can multiply that
 * exponentially, and every later walk (validation rules, cost, execution) pays for the expansion.
 */
export const MAX_EXPANDED_FIELDS = 20_000;

export interface OperationShape {
  /** The root selection's response keys (alias or name) after fragment expansion, each with its field name. */
  rootFields: ReadonlyMap<string, string>;
  /** Fields selected with every fragment spread expanded (counted up to MAX_EXPANDED_FIELDS + 1). */
  expandedFields: number;
}

function badRequest(message: string): GraphQLError {
  return new GraphQLError(message, { extensions: { code: 'BAD_REQUEST' } });
}

/**
 * Fields one selection set may select, counting those its fragments add at the same level. graphql-js's
 * OverlappingFieldsCanBeMerged compares the fields of a selection set pairwise: a few hundred fields at one
 * level, written out or gathered from many fragments, cost it 100 ms and more. A run has about 40 fields.
 */
export const MAX_SELECTION_BREADTH = 100;

interface SelectionSetSize {
  /** Fields below it, every fragment expanded, up to MAX_EXPANDED_FIELDS + 1. */
  fields: number;
  /** Fields at its own level, its fragments' included. */
  breadth: number;
}

function tooCostly(message: string, details: Record<string, number>): GraphQLError {
  return new GraphQLError(message, { extensions: { code: 'QUERY_TOO_COSTLY', details } });
}

/**
 * One walk over an operation that visits each fragment definition once: its size is remembered, so a
 * chain of fragments each spreading the next twice costs its length, not 2^length. A fragment that
 * spreads itself, directly or through others, is a 400 here — before any other walk could loop on it —
 * and so are an expansion beyond MAX_EXPANDED_FIELDS and a selection set broader than MAX_SELECTION_BREADTH
 * (400 QUERY_TOO_COSTLY).
 */
export function operationShape(document: DocumentNode, operation: OperationDefinitionNode): OperationShape {
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const definition of document.definitions) {
    if (definition.kind === Kind.FRAGMENT_DEFINITION) fragments.set(definition.name.value, definition);
  }
  const sizes = new Map<string, SelectionSetSize>();
  const inProgress: string[] = [];
  const cap = MAX_EXPANDED_FIELDS + 1;

  const fragmentSize = (name: string): SelectionSetSize => {
    const known = sizes.get(name);
    if (known !== undefined) return known;
    const fragment = fragments.get(name);
    // an unknown fragment is reported by validation (KnownFragmentNamesRule)
    if (!fragment) return { fields: 0, breadth: 0 };
    if (inProgress.includes(name)) throw badRequest(`fragment cycle: ${[...inProgress.slice(inProgress.indexOf(name)), name].join(' → ')}`);
    inProgress.push(name);
    const size = selectionSetSize(fragment.selectionSet);
    inProgress.pop();
    sizes.set(name, size);
    return size;
  };

  const selectionSetSize = (selectionSet: SelectionSetNode): SelectionSetSize => {
    const total = { fields: 0, breadth: 0 };
    // graphql-js merges a fragment spread twice at one level once
    const spread = new Set<string>();
    for (const selection of selectionSet.selections) {
      if (selection.kind === Kind.FIELD) {
        total.fields += 1 + (selection.selectionSet ? selectionSetSize(selection.selectionSet).fields : 0);
        total.breadth += 1;
      } else {
        if (selection.kind === Kind.FRAGMENT_SPREAD && spread.has(selection.name.value)) continue;
        if (selection.kind === Kind.FRAGMENT_SPREAD) spread.add(selection.name.value);
        const inner =
          selection.kind === Kind.INLINE_FRAGMENT ? selectionSetSize(selection.selectionSet) : fragmentSize(selection.name.value);
        total.fields += inner.fields;
        total.breadth += inner.breadth;
      }
      if (total.breadth > MAX_SELECTION_BREADTH) {
        throw tooCostly(`a selection set selects more than ${MAX_SELECTION_BREADTH} fields (its fragments' included)`, {
          maxSelectionBreadth: MAX_SELECTION_BREADTH,
        });
      }
      if (total.fields >= cap) return { fields: cap, breadth: total.breadth };
    }
    return total;
  };

  const expandedFields = selectionSetSize(operation.selectionSet).fields;
  if (expandedFields > MAX_EXPANDED_FIELDS) {
    throw tooCostly(`the operation selects more than ${MAX_EXPANDED_FIELDS} fields once its fragments are expanded`, {
      maxExpandedFields: MAX_EXPANDED_FIELDS,
    });
  }

  const rootFields = new Map<string, string>();
  const visited = new Set<string>();
  const collectRoot = (selectionSet: SelectionSetNode): void => {
    for (const selection of selectionSet.selections) {
      if (selection.kind === Kind.FIELD) rootFields.set(selection.alias?.value ?? selection.name.value, selection.name.value);
      else if (selection.kind === Kind.INLINE_FRAGMENT) collectRoot(selection.selectionSet);
      else if (!visited.has(selection.name.value)) {
        visited.add(selection.name.value);
        const fragment = fragments.get(selection.name.value);
        if (fragment) collectRoot(fragment.selectionSet);
      }
    }
  };
  collectRoot(operation.selectionSet);
  return { rootFields, expandedFields };
}

/**
 * graphql-js parses recursively: a literal nested a couple of thousand levels deep, still within the token
 * limit, exhausts the stack before the limit is reached. That is the document's fault, so a 400.
 * Registered after the token limit, whose parse function it wraps.
 */
function useNestingLimitedParse(): Plugin {
  return {
    onParse({ parseFn, setParseFn }) {
      setParseFn((source, options) => {
        try {
          return parseFn(source, options);
        } catch (error) {
          if (error instanceof RangeError) throw badRequest('the document is nested too deeply to parse');
          throw error;
        }
      });
    },
  };
}

/** DOCUMENT_LIMITS, enforced while the document is parsed and validated, in the order they must be registered. */
export function useDocumentLimits(): Plugin[] {
  return [
    maxTokensPlugin({ n: DOCUMENT_LIMITS.tokens }),
    useNestingLimitedParse(),
    // introspection counts too: GraphiQL's own introspection query is 13 levels deep
    maxDepthPlugin({ n: DOCUMENT_LIMITS.depth, ignoreIntrospection: false, flattenFragments: true }),
    maxAliasesPlugin({ n: DOCUMENT_LIMITS.aliases }),
  ];
}
