import {
  getOperationAST,
  GraphQLError,
  isInputObjectType,
  isListType,
  isNonNullType,
  isScalarType,
  Kind,
  typeFromAST,
  type DocumentNode,
  type GraphQLInputType,
  type GraphQLSchema,
  type ValueNode,
} from 'graphql';
import { INSTANT_PATTERN, calendarDateProblem } from '../domain/gate/business-date.js';
import { builder } from './builder.js';

// Scalar failures are input errors: 422 INVALID_INPUT, never a schema-level 400.
function invalid(scalar: string, reason: string): GraphQLError {
  return new GraphQLError(`${scalar}: ${reason}`, { extensions: { code: 'INVALID_INPUT', details: { field: scalar, reason } } });
}

const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const LONG_PATTERN = /^-?[0-9]{1,19}$/;
const DECIMAL_PATTERN = /^-?[0-9]{1,38}$/;
const LONG_MIN = -(2n ** 63n);
const LONG_MAX = 2n ** 63n - 1n;

function literalValue(node: ValueNode): unknown {
  switch (node.kind) {
    case Kind.STRING:
    case Kind.ENUM:
      return node.value;
    case Kind.INT:
    case Kind.FLOAT:
      return Number(node.value);
    case Kind.BOOLEAN:
      return node.value;
    case Kind.NULL:
      return null;
    case Kind.LIST:
      return node.values.map(literalValue);
    case Kind.OBJECT:
      return Object.fromEntries(node.fields.map((f) => [f.name.value, literalValue(f.value)]));
    default:
      throw invalid('JSON', 'variables are not allowed inside a JSON literal');
  }
}

function parseUuid(value: unknown): string {
  if (typeof value !== 'string' || !UUID_PATTERN.test(value)) throw invalid('UUID', 'must be a canonical hyphenated UUID');
  return value.toLowerCase();
}

function parseLong(value: unknown): bigint {
  let text: string;
  if (typeof value === 'number') {
    if (!Number.isSafeInteger(value)) throw invalid('Long', 'must be an integer (use a string of digits beyond 2^53)');
    text = String(value);
  } else if (typeof value === 'string') {
    text = value.trim();
  } else {
    throw invalid('Long', 'must be an integer or a string of digits');
  }
  if (!LONG_PATTERN.test(text)) throw invalid('Long', 'must be an integer or a string of digits');
  const n = BigInt(text);
  if (n < LONG_MIN || n > LONG_MAX) throw invalid('Long', 'out of the 64-bit range');
  return n;
}

function parseDecimal(value: unknown): string {
  if (typeof value === 'number') {
    if (!Number.isSafeInteger(value)) throw invalid('Decimal', 'must be an integer of up to 38 digits');
    return String(value);
  }
  if (typeof value !== 'string' || !DECIMAL_PATTERN.test(value.trim())) {
    throw invalid('Decimal', 'must be an integer of up to 38 digits with an optional sign');
  }
  return value.trim().replace(/^(-?)0+(?=\d)/, '$1');
}

export function parseDate(value: unknown): string {
  if (typeof value !== 'string') throw invalid('Date', 'must be YYYY-MM-DD');
  const problem = calendarDateProblem(value);
  if (problem === 'must be YYYY-MM-DD') throw invalid('Date', problem);
  if (problem) throw invalid('Date', `${value} ${problem}`);
  return value;
}

export function parseDateTime(value: unknown): Date {
  if (typeof value !== 'string' || !INSTANT_PATTERN.test(value)) {
    throw invalid('DateTime', 'must be ISO-8601 with a UTC offset, e.g. 2026-10-23T06:30:00+09:00');
  }
  parseDate(value.slice(0, 10));
  const date = new Date(value);
  if (Number.isNaN(date.getTime())) throw invalid('DateTime', 'is not a valid instant');
  return date;
}

function parseJsonObject(value: unknown): Record<string, unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw invalid('JSON', 'must be a JSON object');
  return value as Record<string, unknown>;
}

function serializeLong(value: unknown): number | string {
  const n = typeof value === 'bigint' ? value : BigInt(value as string | number);
  // Contract: Long is a JSON number. Beyond 2^53 a number would lose digits, so those go out as strings.
  return n >= BigInt(Number.MIN_SAFE_INTEGER) && n <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(n) : n.toString();
}

builder.scalarType('UUID', {
  description: 'Canonical hyphenated UUID.',
  serialize: (value) => String(value),
  parseValue: parseUuid,
  parseLiteral: (node) => parseUuid(node.kind === Kind.STRING ? node.value : undefined),
});

builder.scalarType('Long', {
  description: '64-bit integer. Input: a JSON number or a string of digits. Output: a JSON number.',
  serialize: serializeLong,
  parseValue: parseLong,
  parseLiteral: (node) => parseLong(node.kind === Kind.INT || node.kind === Kind.STRING ? node.value : undefined),
});

// Prisma returns NUMERIC as a decimal.js value, whose toString() switches to exponent notation.
function serializeDecimal(value: unknown): string {
  if (value !== null && typeof value === 'object' && 'toFixed' in value) return (value as { toFixed(): string }).toFixed();
  return String(value);
}

builder.scalarType('Decimal', {
  description: 'Integer of up to 38 digits with optional sign, carried as a string (SCNs, split bounds).',
  serialize: serializeDecimal,
  parseValue: parseDecimal,
  parseLiteral: (node) => parseDecimal(node.kind === Kind.INT || node.kind === Kind.STRING ? node.value : undefined),
});

builder.scalarType('DateTime', {
  description: 'ISO-8601 instant with offset; output in UTC.',
  serialize: (value) => (value instanceof Date ? value : new Date(String(value))).toISOString(),
  parseValue: parseDateTime,
  parseLiteral: (node) => parseDateTime(node.kind === Kind.STRING ? node.value : undefined),
});

builder.scalarType('Date', {
  description: 'Calendar date YYYY-MM-DD.',
  serialize: (value) => String(value),
  parseValue: parseDate,
  parseLiteral: (node) => parseDate(node.kind === Kind.STRING ? node.value : undefined),
});

builder.scalarType('JSON', {
  description: 'A JSON object.',
  serialize: (value) => value,
  parseValue: parseJsonObject,
  parseLiteral: (node) => parseJsonObject(literalValue(node)),
});

const BOOLEAN_STRINGS: Readonly<Record<string, boolean>> = { true: true, false: false };

const holdsBoolean = new WeakMap<object, boolean>();

/** Whether a value of this type can contain a Boolean (an input object's answer is cached: walks skip the rest). */
function mayHoldBoolean(declared: GraphQLInputType): boolean {
  const type = isNonNullType(declared) ? declared.ofType : declared;
  if (isListType(type)) return mayHoldBoolean(type.ofType);
  if (isScalarType(type)) return type.name === 'Boolean';
  if (!isInputObjectType(type)) return false;
  let found = holdsBoolean.get(type);
  if (found === undefined) {
    holdsBoolean.set(type, false); // a recursive input type ends here
    found = Object.values(type.getFields()).some((field) => mayHoldBoolean(field.type));
    holdsBoolean.set(type, found);
  }
  return found;
}

/**
 * Boolean inputs take the strings "true" and "false" as Long takes strings of digits (NiFi's attributes are
 * strings). The schema keeps GraphQL's own Boolean, which cannot be replaced by a scalar of ours (introspection
 * uses it), so the variables are coerced before graphql-js reads them: every string at a Boolean position of
 * the operation's variables becomes that Boolean, in place, and any other string there is a 422 naming the
 * field. One walk over what the input types declare; values of any other type are left to graphql-js.
 */
export function coerceBooleanStrings(
  schema: GraphQLSchema,
  document: DocumentNode,
  operationName: string | null | undefined,
  variables: Record<string, unknown> | null | undefined,
): GraphQLError | null {
  const operation = getOperationAST(document, operationName);
  if (!operation || !variables) return null;
  const path: Array<string | number> = [];
  const walk = (holder: Record<string | number, unknown>, key: string | number, declared: GraphQLInputType): GraphQLError | null => {
    const type = isNonNullType(declared) ? declared.ofType : declared;
    const value = holder[key];
    if (value === null || value === undefined || !mayHoldBoolean(type)) return null;
    path.push(key);
    let problem: GraphQLError | null = null;
    if (isListType(type)) {
      // a single value stands for a list of one, as graphql-js coerces it
      if (Array.isArray(value)) {
        for (let i = 0; i < value.length && !problem; i++) problem = walk(value as unknown as Record<number, unknown>, i, type.ofType);
      } else {
        path.pop();
        return walk(holder, key, type.ofType);
      }
    } else if (isInputObjectType(type)) {
      if (typeof value === 'object' && !Array.isArray(value)) {
        for (const field of Object.values(type.getFields())) {
          if (problem) break;
          if (Object.hasOwn(value, field.name)) problem = walk(value as Record<string, unknown>, field.name, field.type);
        }
      }
    } else if (isScalarType(type) && type.name === 'Boolean' && typeof value === 'string') {
      const parsed = BOOLEAN_STRINGS[value.trim()];
      if (parsed === undefined) {
        const field = path.join('.');
        const reason = 'must be true or false (a JSON boolean, or the string "true" or "false")';
        problem = new GraphQLError(`${field}: ${reason}`, { extensions: { code: 'INVALID_INPUT', details: { field, reason } } });
      } else {
        holder[key] = parsed;
      }
    }
    path.pop();
    return problem;
  };
  for (const definition of operation.variableDefinitions ?? []) {
    const type = typeFromAST(schema, definition.type) as GraphQLInputType | undefined;
    const name = definition.variable.name.value;
    const problem = type && Object.hasOwn(variables, name) ? walk(variables, name, type) : null;
    if (problem) return problem;
  }
  return null;
}
