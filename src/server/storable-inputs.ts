import { GraphQLError, Kind, visit, type DocumentNode, type ValueNode } from 'graphql';
import type { Plugin } from 'graphql-yoga';
import { refuseBeforeExecution } from './before-execution.js';

/** JSON inputs (parameters, details, outputs) nested deeper than this are refused. */
export const MAX_NESTING = 64;

interface Problem {
  field: string;
  reason: string;
}

/**
 * What PostgreSQL cannot store, whatever the field: U+0000 in text or jsonb, a lone UTF-16 surrogate (jsonb
 * refuses its escape; text would get U+FFFD instead of what was sent), and jsonb nested deep enough to
 * exhaust its stack.
 */
function unstorableText(text: string): string | null {
  if (text.includes('\u0000')) return 'must not contain U+0000 (NUL)';
  if (!text.isWellFormed()) return 'must not contain a lone UTF-16 surrogate';
  return null;
}

/**
 * The first unstorable string or key in a variable's JSON value, or nesting beyond MAX_NESTING. `path` is
 * one stack for the whole walk, joined only for a problem: a 10,000-partition manifest has ~60,000 values.
 */
function inVariable(value: unknown, path: string[]): Problem | null {
  if (typeof value === 'string') {
    const reason = unstorableText(value);
    return reason ? { field: path.join('.'), reason } : null;
  }
  if (value === null || typeof value !== 'object') return null;
  if (path.length > MAX_NESTING + 1) return { field: path.join('.'), reason: `must not be nested more than ${MAX_NESTING} levels deep` };
  for (const key in value) {
    const keyReason = unstorableText(key);
    if (keyReason) return { field: path.join('.'), reason: `keys ${keyReason}` };
    path.push(key);
    const found = inVariable((value as Record<string, unknown>)[key], path);
    if (found) return found;
    path.pop();
  }
  return null;
}

/** The same for a literal in the document (an argument or a variable's default). */
function inLiteral(node: ValueNode, path: string[], depth: number): Problem | null {
  switch (node.kind) {
    case Kind.STRING: {
      const reason = unstorableText(node.value);
      return reason ? { field: path.join('.'), reason } : null;
    }
    case Kind.LIST:
    case Kind.OBJECT: {
      if (depth > MAX_NESTING) return { field: path.join('.'), reason: `must not be nested more than ${MAX_NESTING} levels deep` };
      const items =
        node.kind === Kind.LIST
          ? node.values.map((v, i) => [String(i), v] as const)
          : node.fields.map((f) => [f.name.value, f.value] as const);
      for (const [key, item] of items) {
        const found = inLiteral(item, [...path, key], depth + 1);
        if (found) return found;
      }
      return null;
    }
    default:
      return null;
  }
}

function inDocument(document: DocumentNode): Problem | null {
  let found: Problem | null = null;
  visit(document, {
    Argument(node) {
      found ??= inLiteral(node.value, [node.name.value], 0);
      return false;
    },
    VariableDefinition(node) {
      if (node.defaultValue) found ??= inLiteral(node.defaultValue, [node.variable.name.value], 0);
      return false;
    },
  });
  return found;
}

function invalidInput({ field, reason }: Problem): GraphQLError {
  return new GraphQLError(`${field}: ${reason}`, { extensions: { code: 'INVALID_INPUT', details: { field, reason } } });
}

/**
 * Strings PostgreSQL would reject never reach it: every string of the variables and of the document's
 * literals is checked once, before execution, and the first unstorable one is a 422 naming its field
 * (the argument or variable path, as `input.details.note`).
 */
export function useStorableInputs(): Plugin {
  return refuseBeforeExecution(({ document, variableValues }) => {
    for (const [name, value] of Object.entries(variableValues ?? {})) {
      const problem = inVariable(value, [name]);
      if (problem) return invalidInput(problem);
    }
    const problem = inDocument(document);
    return problem ? invalidInput(problem) : null;
  });
}
