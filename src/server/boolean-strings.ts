import type { Plugin } from 'graphql-yoga';
import { coerceBooleanStrings } from '../graphql/scalars.js';
import { refuseBeforeExecution } from './before-execution.js';

/**
 * "true" and "false" where a Boolean variable is expected are those Booleans (src/graphql/scalars.ts); any
 * other string there is refused with 422 before anything executes.
 */
export function useBooleanStrings(): Plugin {
  return refuseBeforeExecution(({ schema, document, operationName, variableValues }) =>
    coerceBooleanStrings(schema, document, operationName, variableValues),
  );
}
