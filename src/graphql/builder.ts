import SchemaBuilder, { type SchemaTypes } from '@pothos/core';
import ComplexityPlugin from '@pothos/plugin-complexity';
import DataloaderPlugin from '@pothos/plugin-dataloader';
import { LIST_ESTIMATES } from './cost.js';
import type { Principal } from '../auth/principal.js';
import type { Role } from '../config/config.js';
import type { Services } from './services.js';

/** Who a request acts as (src/auth/principal.ts): the HTTP layer authenticated it. */
export type Actor = Principal;

export interface GraphQLContext {
  actor: Actor | null;
  requestId: string;
  services: Services;
}

/** Root fields declare the roles that may call them; the auth plugin reads this before validation. */
export type RootFieldExtensions = {
  roles: readonly Role[];
};

export const builder = new SchemaBuilder<{
  Context: GraphQLContext;
  DefaultFieldNullability: false;
  Scalars: {
    UUID: { Input: string; Output: string };
    Long: { Input: bigint; Output: bigint | number | string };
    Decimal: { Input: string; Output: string };
    DateTime: { Input: Date; Output: Date | string };
    Date: { Input: string; Output: string };
    JSON: { Input: Record<string, unknown>; Output: unknown };
  };
}>({
  defaultFieldNullability: false,
  plugins: [ComplexityPlugin, DataloaderPlugin],
  // the cost is checked once per request, before execution (src/server/query-cost.ts), not per root field
  complexity: { defaultComplexity: 1, defaultListMultiplier: LIST_ESTIMATES.default, disabled: true },
});

/** The builder's type parameters, for helpers typed against its refs. */
export type BuilderTypes = typeof builder extends PothosSchemaTypes.SchemaBuilder<infer T extends SchemaTypes> ? T : never;

builder.queryType({});
builder.mutationType({});
