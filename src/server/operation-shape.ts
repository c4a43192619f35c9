import {
  GraphQLError, Kind, type DocumentNode, type FragmentDefinitionNode, type OperationDefinitionNode, type SelectionSetNode,
} from 'graphql';

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
 * One walk over an operation that visits each fragment definition once: its size is remembered, so a
 * chain of fragments each spreading the next twice costs its length, not 2^length. A fragment that
 * spreads itself, directly or through others, is a 400 here — before any other walk could loop on it —
 * and so is an expansion beyond MAX_EXPANDED_FIELDS (400 QUERY_TOO_COSTLY).
 */
export function operationShape(document: DocumentNode, operation: OperationDefinitionNode): OperationShape {
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const definition of document.definitions) {
    if (definition.kind === Kind.FRAGMENT_DEFINITION) fragments.set(definition.name.value, definition);
  }
  const sizes = new Map<string, number>();
  const inProgress: string[] = [];
  const cap = MAX_EXPANDED_FIELDS + 1;

  const fragmentSize = (name: string): number => {
    const known = sizes.get(name);
    if (known !== undefined) return known;
    const fragment = fragments.get(name);
    // an unknown fragment is reported by validation (KnownFragmentNamesRule)
    if (!fragment) return 0;
    if (inProgress.includes(name)) throw badRequest(`fragment cycle: ${[...inProgress.slice(inProgress.indexOf(name)), name].join(' → ')}`);
    inProgress.push(name);
    const size = selectionSetSize(fragment.selectionSet);
    inProgress.pop();
    sizes.set(name, size);
    return size;
  };

  const selectionSetSize = (selectionSet: SelectionSetNode): number => {
    let size = 0;
    for (const selection of selectionSet.selections) {
      if (selection.kind === Kind.FIELD) size += 1 + (selection.selectionSet ? selectionSetSize(selection.selectionSet) : 0);
      else if (selection.kind === Kind.INLINE_FRAGMENT) size += selectionSetSize(selection.selectionSet);
      else size += fragmentSize(selection.name.value);
      if (size >= cap) return cap;
    }
    return size;
  };

  const expandedFields = selectionSetSize(operation.selectionSet);
  if (expandedFields > MAX_EXPANDED_FIELDS) {
    throw new GraphQLError(`the operation selects more than ${MAX_EXPANDED_FIELDS} fields once its fragments are expanded`, {
      extensions: { code: 'QUERY_TOO_COSTLY', details: { maxExpandedFields: MAX_EXPANDED_FIELDS } },
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
