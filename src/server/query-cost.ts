import { complexityFromQuery } from '@pothos/plugin-complexity';
import { GraphQLError, Kind, getNamedType, isInputObjectType, typeFromAST } from 'graphql';
import type { Plugin } from 'graphql-yoga';
import { MAX_QUERY_COST } from '../graphql/cost.js';
import { refuseBeforeExecution, type OperationArgs } from './before-execution.js';

/**
 * The cost of the operation about to run, from the fields' declared costs (src/graphql/cost.ts) and the
 * request's own variables; `null` when its variables do not coerce (execution reports those errors).
 */
function costOf(args: OperationArgs): number | null {
  const operations = args.document.definitions.filter((d) => d.kind === Kind.OPERATION_DEFINITION);
  const operation = args.operationName ? operations.find((o) => o.name?.value === args.operationName) : operations[0];
  if (!operation) return null;
  // complexityFromQuery takes a document's first operation: hand it the one that runs, with the fragments
  const fragments = args.document.definitions.filter((d) => d.kind === Kind.FRAGMENT_DEFINITION);
  // Costs read page sizes (Int arguments), never a variable of an input-object type; coercing those is
  // most of the work of a large mutation (a 10,000-partition manifest: ~170 ms), and the executor coerces
  // them again. No field whose cost reads its arguments takes a required one, so they are left out here.
  const costed = {
    ...operation,
    variableDefinitions: operation.variableDefinitions?.filter((d) => !isInputObjectType(getNamedType(typeFromAST(args.schema, d.type)))),
  };
  try {
    return complexityFromQuery(
      { kind: Kind.DOCUMENT, definitions: [costed, ...fragments] },
      {
        schema: args.schema,
        variables: args.variableValues ?? {},
        ctx: args.contextValue as object,
      },
    ).complexity;
  } catch (error) {
    if (error instanceof GraphQLError) return null;
    throw error;
  }
}

function tooCostly(cost: number): GraphQLError {
  return new GraphQLError(`the request costs ${cost}, more than the limit of ${MAX_QUERY_COST}: ask for fewer items or fields`, {
    extensions: { code: 'QUERY_TOO_COSTLY', details: { cost, maxCost: MAX_QUERY_COST } },
  });
}

/**
 * Refuses a request whose cost exceeds MAX_QUERY_COST before any resolver runs: list fields count as many
 * items as their page size allows, so twenty aliases of a large page are refused, not executed.
 * Runs after validation, which has already bounded the document (operation-shape.ts).
 */
export function useQueryCost(): Plugin {
  return refuseBeforeExecution((args) => {
    const cost = costOf(args);
    return cost !== null && cost > MAX_QUERY_COST ? tooCostly(cost) : null;
  });
}
