// Inputs declared once: a zod object schema parses an input, and its GraphQL input type or arguments are
// derived from it — each field's type, nullability, default and description (zod's .describe()).
import type { ArgBuilder, InputType } from '@pothos/core';
import { z } from 'zod';
import { builder, type BuilderTypes } from './builder.js';

type GraphQLInput = InputType<BuilderTypes>;

/** The GraphQL type of a schema whose zod type does not tell it: a scalar carried as a string, an enum, an input object. */
const graphqlTypes = z.registry<{ type: GraphQLInput }>();

function declaredAs<S extends z.ZodType>(type: GraphQLInput, schema: S): S {
  graphqlTypes.add(schema as z.ZodType, { type });
  return schema;
}

// What the scalar has already parsed and checked (src/graphql/scalars.ts): zod sees the parsed string.
export const uuid = declaredAs('UUID', z.string());
export const decimal = declaredAs('Decimal', z.string());
export const date = declaredAs('Date', z.string());
export const dateTime = declaredAs('DateTime', z.date());

/** A GraphQL enum's values; a zod enum without one is a String field. */
export function inputEnum<const V extends readonly [string, ...string[]]>(
  type: PothosSchemaTypes.EnumRef<BuilderTypes, V[number]>,
  values: V,
) {
  return declaredAs(type, z.enum(values));
}

/** A named input object type whose fields are the schema's. */
export function inputType(name: string, schema: z.ZodObject) {
  return builder.inputType(name, { fields: (t) => fieldsOf(schema, (options) => t.field(options as FieldOptions)) });
}

/** The same, as a field of another input. */
export const inputObject = <S extends z.ZodObject>(name: string, schema: S): S => declaredAs(inputType(name, schema), schema);

/** A field's arguments, as the schema that parses them declares them. */
export function argsOf(t: { arg: ArgBuilder<BuilderTypes> }, schema: z.ZodObject) {
  return fieldsOf(schema, (options) => t.arg(options as FieldOptions));
}

export interface InputFieldOptions {
  type: GraphQLInput | [GraphQLInput];
  required: boolean | { list: boolean; items: boolean };
  defaultValue?: unknown;
  description?: string;
}

// the one place the derived options meet Pothos's per-type option types
type FieldOptions = PothosSchemaTypes.InputFieldOptions<BuilderTypes, GraphQLInput, boolean>;

function fieldsOf<R>(schema: z.ZodObject, field: (options: InputFieldOptions) => R): Record<string, R> {
  return Object.fromEntries(Object.entries(schema.shape).map(([name, fieldSchema]) => [name, field(inputFieldOptions(name, fieldSchema))]));
}

/**
 * Read from the outside in: optional, nullable and default make the field nullable (a default is shown as
 * the field's), a pipe is typed by what it takes in, and the first description found is the field's.
 */
export function inputFieldOptions(name: string, schema: z.ZodType): InputFieldOptions {
  let required = true;
  let defaultValue: unknown;
  let description: string | undefined;
  let inner = schema;
  for (;;) {
    description ??= inner.description;
    if (inner instanceof z.ZodOptional || inner instanceof z.ZodNullable) {
      required = false;
      inner = inner.unwrap() as z.ZodType;
    } else if (inner instanceof z.ZodDefault) {
      required = false;
      defaultValue ??= inner.def.defaultValue;
      inner = inner.unwrap() as z.ZodType;
    } else if (inner instanceof z.ZodPipe) {
      inner = inner.in as z.ZodType;
    } else {
      break;
    }
  }
  const options = (type: InputFieldOptions['type'], req: InputFieldOptions['required']): InputFieldOptions => ({
    type,
    required: req,
    ...(defaultValue === undefined ? {} : { defaultValue }),
    ...(description === undefined ? {} : { description }),
  });
  if (inner instanceof z.ZodArray) {
    const items = inputFieldOptions(name, inner.element as z.ZodType);
    if (Array.isArray(items.type)) throw new Error(`${name}: lists of lists are not GraphQL inputs we declare`);
    return options([items.type], { list: required, items: items.required === true });
  }
  return options(graphqlType(name, inner), required);
}

function graphqlType(name: string, schema: z.ZodType): GraphQLInput {
  const registered = graphqlTypes.get(schema);
  if (registered) return registered.type;
  if (schema instanceof z.ZodString || schema instanceof z.ZodEnum) return 'String';
  if (schema instanceof z.ZodBoolean) return 'Boolean';
  if (schema instanceof z.ZodNumber) return 'Int';
  if (schema instanceof z.ZodBigInt) return 'Long';
  if (schema instanceof z.ZodDate) return 'DateTime';
  if (schema instanceof z.ZodRecord) return 'JSON';
  // a union is typed as its first member: f.int32 takes the Long scalar's bigint first
  if (schema instanceof z.ZodUnion) return graphqlType(name, schema.options[0] as z.ZodType);
  throw new Error(`${name}: no GraphQL input type for a zod ${schema.def.type}; declare it with inputObject or inputEnum`);
}
