// The fast tier's server: Yoga with a handful of fields and only the plugins under test — no database, no
// HTTP server (yoga.fetch), no global setup needed. The fields declare roles and costs as the real schema
// does (extensions.roles, extensions.complexity), and fail in each of the ways the error envelope maps.
import {
  GraphQLError,
  GraphQLID,
  GraphQLInt,
  GraphQLList,
  GraphQLNonNull,
  GraphQLObjectType,
  GraphQLScalarType,
  GraphQLSchema,
  GraphQLString,
  type GraphQLFieldConfig,
  type GraphQLOutputType,
} from 'graphql';
import { createYoga, type YogaServerInstance, type YogaServerOptions } from 'graphql-yoga';
import pino, { type Logger } from 'pino';
import type { Role } from '../../src/config/config.js';
import { DomainError, type ErrorCode } from '../../src/contract/errors.js';
import { pagedCost } from '../../src/graphql/cost.js';
import type { Actor } from '../../src/graphql/builder.js';

export const ACTORS = {
  nifi: { name: 'nifi-cluster', roles: ['nifi'], method: 'TOKEN', issuer: null, subject: null },
  operator: { name: 'alice-operator', roles: ['operator'], method: 'TOKEN', issuer: null, subject: null },
  viewer: { name: 'victor-viewer', roles: ['viewer'], method: 'TOKEN', issuer: null, subject: null },
} as const satisfies Record<Role, Actor>;

const ANY_ROLE: readonly Role[] = ['nifi', 'operator', 'viewer'];

/** What the resolvers were asked to do, to prove a refused request executed nothing. */
export const executed: string[] = [];

function field(
  type: GraphQLOutputType,
  roles: readonly Role[] | null,
  rest: Partial<GraphQLFieldConfig<unknown, unknown>> = {},
): GraphQLFieldConfig<unknown, unknown> {
  return { type, ...rest, extensions: { ...(roles ? { roles } : {}), ...rest.extensions } };
}

const Item: GraphQLObjectType = new GraphQLObjectType({
  name: 'Item',
  fields: () => ({
    id: { type: new GraphQLNonNull(GraphQLID) },
    name: { type: GraphQLString },
    // an unbounded list: Pothos' default estimate of 10 items
    children: { type: new GraphQLNonNull(new GraphQLList(new GraphQLNonNull(Item))), resolve: () => [] },
  }),
});

// any JSON value, as the real JSON scalar takes parameters and details
const JSONScalar = new GraphQLScalarType({ name: 'JSON' });

const items = (first: number | null | undefined) => Array.from({ length: first ?? 10 }, (_, i) => ({ id: String(i), name: `item ${i}` }));

const smallSchema = new GraphQLSchema({
  query: new GraphQLObjectType({
    name: 'Query',
    fields: {
      hello: field(GraphQLString, ANY_ROLE, {
        resolve: () => {
          executed.push('hello');
          return 'world';
        },
      }),
      operatorOnly: field(GraphQLString, ['operator'], {
        resolve: () => {
          executed.push('operatorOnly');
          return 'granted';
        },
      }),
      items: field(new GraphQLNonNull(new GraphQLList(new GraphQLNonNull(Item))), ANY_ROLE, {
        args: { first: { type: GraphQLInt } },
        resolve: (_, args: { first?: number | null }) => {
          executed.push('items');
          return items(args.first);
        },
        extensions: { complexity: pagedCost('first', 10, 500) },
      }),
      domainError: field(GraphQLString, ANY_ROLE, {
        // padding: that many more characters in the message and in the details, as a long MANIFEST_INVALID has
        args: { code: { type: new GraphQLNonNull(GraphQLString) }, padding: { type: GraphQLInt } },
        resolve: (_, args: { code: string; padding?: number | null }) => {
          const pad = args.padding ? { padding: 'p'.repeat(args.padding) } : {};
          throw new DomainError(args.code as ErrorCode, { asked: args.code, ...pad }, `refused with ${args.code}${pad.padding ?? ''}`);
        },
      }),
      invalidInput: field(GraphQLString, ANY_ROLE, {
        resolve: () => {
          // as the scalars refuse a value: a GraphQLError carrying the contract's code
          throw new GraphQLError('input.jobKey: must match ^[A-Z]', {
            extensions: { code: 'INVALID_INPUT', details: { field: 'input.jobKey', reason: 'must match ^[A-Z]' } },
          });
        },
      }),
      bug: field(GraphQLString, ANY_ROLE, {
        resolve: () => {
          throw new Error('function nifi_ops.claim_partition(uuid) does not exist');
        },
      }),
      databaseDown: field(GraphQLString, ANY_ROLE, {
        resolve: () => {
          throw Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' });
        },
      }),
    },
  }),
  mutation: new GraphQLObjectType({
    name: 'Mutation',
    fields: {
      act: field(GraphQLInt, ['nifi'], {
        args: { input: { type: GraphQLString }, parameters: { type: JSONScalar } },
        resolve: () => {
          executed.push('act');
          return 1;
        },
      }),
      operate: field(GraphQLInt, ['operator'], {
        resolve: () => {
          executed.push('operate');
          return 1;
        },
      }),
    },
  }),
  subscription: new GraphQLObjectType({
    name: 'Subscription',
    fields: {
      itemAdded: field(new GraphQLNonNull(new GraphQLList(new GraphQLNonNull(Item))), ANY_ROLE, {
        args: { first: { type: GraphQLInt } },
        extensions: { complexity: pagedCost('first', 10, 500) },
        subscribe: async function* (_, args: { first?: number | null }) {
          executed.push('itemAdded');
          yield { itemAdded: items(args.first) };
        },
      }),
    },
  }),
});

type ServerContext = { actor?: Actor | null };
type UserContext = { actor: Actor | null };
export type SmallYoga = YogaServerInstance<ServerContext, UserContext>;

/** Yoga as app.ts configures it for errors (its own masking and logging off: the envelope plugin does both). */
export function smallYoga(plugins: NonNullable<YogaServerOptions<ServerContext, UserContext>['plugins']>): SmallYoga {
  return createYoga<ServerContext, UserContext>({
    schema: smallSchema,
    graphqlEndpoint: '/graphql',
    maskedErrors: false,
    logging: false,
    landingPage: false,
    context: ({ actor }) => ({ actor: actor ?? null }),
    plugins,
  });
}

/** A logger whose lines are kept as parsed objects. */
export function capturingLogger(): { log: Logger; lines: Array<Record<string, any>> } {
  const lines: Array<Record<string, any>> = [];
  const log = pino({ level: 'debug' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
  return { log, lines };
}

export interface SmallResponse {
  status: number;
  headers: Headers;
  body: {
    data?: Record<string, any> | null;
    errors?: Array<{ message: string; path?: string[]; locations?: unknown; extensions?: Record<string, any> }>;
  };
  /** The first error's extensions.code, if any. */
  code: string | undefined;
  details: Record<string, unknown> | undefined;
}

/** POST /graphql through yoga.fetch, as the actor (viewer unless told; null: as if no token had been checked). */
export async function post(
  yoga: SmallYoga,
  query: string,
  options: { variables?: Record<string, unknown>; operationName?: string; actor?: Actor | null; headers?: Record<string, string> } = {},
): Promise<SmallResponse> {
  const actor = options.actor === undefined ? ACTORS.viewer : options.actor;
  const response = await yoga.fetch(
    'http://test/graphql',
    {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...options.headers },
      body: JSON.stringify({ query, variables: options.variables ?? {}, operationName: options.operationName }),
    },
    { actor },
  );
  const body = (await response.json()) as SmallResponse['body'];
  return {
    status: response.status,
    headers: response.headers,
    body,
    code: body.errors?.[0]?.extensions?.code,
    details: body.errors?.[0]?.extensions?.details,
  };
}
