// The span of one GraphQL query or mutation: a child of the request's server span (on an execution thread,
// of the traceparent the main thread passed along), the parent of the SQL statements its resolvers run.
import { context, type Span, trace } from '@opentelemetry/api';
import { getOperationAST, type OperationDefinitionNode } from 'graphql';
import type { Plugin } from 'graphql-yoga';
import { activeTracer, failSpan, LC_ATTRIBUTES } from '../tracing/tracing.js';
import { decidingErrorCode } from './error-envelope.js';

/** OpenTelemetry's GraphQL attributes (still incubating in the semantic conventions, so named here). */
const ATTR_GRAPHQL_OPERATION_TYPE = 'graphql.operation.type';
const ATTR_GRAPHQL_OPERATION_NAME = 'graphql.operation.name';
const ATTR_ROOT_FIELD = 'lc.graphql.root_field';

/** Ids a client sends are validated by the schema; an attribute keeps at most this much of one. */
const MAX_ID_ATTRIBUTE = 200;

const IDENTIFYING = [
  ['runId', LC_ATTRIBUTES.runId],
  ['partitionId', LC_ATTRIBUTES.partitionId],
  ['jobKey', LC_ATTRIBUTES.jobKey],
] as const;

/** The operation's first root field: what the access log and the spans name it by. */
export function rootField(operation: OperationDefinitionNode | null | undefined): string {
  const first = operation?.selectionSet.selections[0];
  return first?.kind === 'Field' ? first.name.value : 'unknown';
}

/** runId, partitionId and jobKey from an object (the input variables, the root field's payload) onto the span. */
function identify(span: Span, source: unknown): void {
  if (!source || typeof source !== 'object') return;
  for (const [key, attribute] of IDENTIFYING) {
    const value = (source as Record<string, unknown>)[key];
    if (typeof value === 'string' && value.length > 0) span.setAttribute(attribute, value.slice(0, MAX_ID_ATTRIBUTE));
  }
}

/**
 * A span per query and mutation, named `<type> <root field>`, with runId/partitionId/jobKey from the input
 * variables or the payload (createRun's new runId), and its errors' code (the answer's X-Error-Code) as its
 * failure. Subscriptions live for hours and are not traced.
 */
export function useOperationSpans(): Plugin {
  return {
    onExecute({ args, executeFn, setExecuteFn }) {
      const tracer = activeTracer();
      if (!tracer) return;
      const operation = getOperationAST(args.document, args.operationName);
      const type = operation?.operation ?? 'unknown';
      const field = rootField(operation);
      const span = tracer.startSpan(`${type} ${field}`, {
        attributes: {
          [ATTR_GRAPHQL_OPERATION_TYPE]: type,
          [ATTR_ROOT_FIELD]: field,
          ...(operation?.name ? { [ATTR_GRAPHQL_OPERATION_NAME]: operation.name.value.slice(0, MAX_ID_ATTRIBUTE) } : {}),
        },
      });
      const variables = args.variableValues ?? {};
      identify(span, variables.input ?? variables);
      const active = trace.setSpan(context.active(), span);
      setExecuteFn((executionArgs) => context.with(active, () => executeFn(executionArgs)));
      return {
        onExecuteDone({ result }) {
          if (Symbol.asyncIterator in result) {
            span.end();
            return;
          }
          const data = result.data as Record<string, unknown> | null | undefined;
          identify(span, data?.[field]);
          if (result.errors?.length) failSpan(span, decidingErrorCode(result.errors), result.errors[0]!.message);
          span.end();
        },
      };
    },
  };
}
