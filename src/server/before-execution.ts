import type { DocumentNode, GraphQLError, GraphQLSchema } from 'graphql';
import type { Plugin } from 'graphql-yoga';

/** What a check before execution sees of the operation about to run. */
export interface OperationArgs {
  schema: GraphQLSchema;
  document: DocumentNode;
  operationName?: string | null;
  /** The request's variables as sent, before coercion. */
  variableValues?: Record<string, unknown> | null;
  contextValue: unknown;
}

/**
 * A refusal decided once per request, after validation and before any resolver runs, for queries,
 * mutations and subscriptions alike: the error becomes the whole result. Not a validation rule, because
 * Yoga caches validation results per document and these checks depend on the request's variables.
 */
export function refuseBeforeExecution(check: (args: OperationArgs) => GraphQLError | null): Plugin {
  return {
    onExecute({ args, setResultAndStopExecution }) {
      const error = check(args);
      if (error) setResultAndStopExecution({ errors: [error] });
    },
    onSubscribe({ args, setResultAndStopExecution }) {
      const error = check(args);
      if (error) setResultAndStopExecution({ errors: [error] });
    },
  };
}
