import { timingSafeEqual } from 'node:crypto';
import {
  getOperationAST, GraphQLError, Kind, type DocumentNode, type GraphQLObjectType, type GraphQLSchema,
  type SelectionSetNode,
} from 'graphql';
import type { Plugin } from 'graphql-yoga';
import { tokenDigest } from '../auth/tokens.js';
import type { Config, Role } from '../config/config.js';
import type { Actor, RootFieldExtensions } from '../graphql/builder.js';
import { ERROR_HTTP_STATUS } from '../domain/errors.js';

export type Authenticate = (authorization: string | null) => Actor | null;

/** Bearer tokens checked against the configured SHA-256 digests; only digests are ever held. */
export function createAuthenticator(tokens: Config['auth']['tokens']): Authenticate {
  const entries = tokens.map((t) => ({ digest: Buffer.from(t.sha256, 'hex'), actor: { name: t.name, roles: t.roles } }));
  return (authorization) => {
    const match = authorization ? /^Bearer\s+(\S+)\s*$/i.exec(authorization) : null;
    if (!match) return null;
    const digest = tokenDigest(match[1]!);
    // compare against every entry so the time taken does not tell which digests exist
    let found: Actor | null = null;
    for (const entry of entries) if (timingSafeEqual(entry.digest, digest)) found = entry.actor;
    return found;
  };
}

const actors = new WeakMap<Request, Actor | null>();

export function actorOf(request: Request, authenticate: Authenticate): Actor | null {
  if (!actors.has(request)) actors.set(request, authenticate(request.headers.get('authorization')));
  return actors.get(request) ?? null;
}

function authError(code: 'UNAUTHENTICATED' | 'FORBIDDEN', message: string): GraphQLError {
  const headers: Record<string, string> = code === 'UNAUTHENTICATED' ? { 'WWW-Authenticate': 'Bearer' } : {};
  return new GraphQLError(message, { extensions: { code, http: { status: ERROR_HTTP_STATUS[code], headers } } });
}

function rootFieldNames(document: DocumentNode, selectionSet: SelectionSetNode, into: Set<string>): void {
  for (const selection of selectionSet.selections) {
    if (selection.kind === Kind.FIELD) into.add(selection.name.value);
    else if (selection.kind === Kind.INLINE_FRAGMENT) rootFieldNames(document, selection.selectionSet, into);
    else {
      const fragment = document.definitions.find(
        (d) => d.kind === Kind.FRAGMENT_DEFINITION && d.name.value === selection.name.value,
      );
      if (fragment?.kind === Kind.FRAGMENT_DEFINITION) rootFieldNames(document, fragment.selectionSet, into);
    }
  }
}

function rolesOf(rootType: GraphQLObjectType | null | undefined, field: string): readonly Role[] | null {
  const extensions = rootType?.getFields()[field]?.extensions as Partial<RootFieldExtensions> | undefined;
  return extensions?.roles ?? null;
}

/**
 * Decides 401/403 from the operation's root fields before validation and variable coercion run, so a
 * caller without the right token learns nothing about its input (ref §3.0: auth wins over validation).
 * Mutations must have exactly one root field: a NiFi request is one decision.
 */
export function useRootFieldAuth(authenticate: Authenticate): Plugin<{ request: Request; params: { operationName?: string } }> {
  return {
    // Throws rather than setting a validation result: Yoga caches validation results per document, and
    // an auth refusal must never be cached for the next caller of the same document.
    onValidate({ context, params }) {
      const schema: GraphQLSchema = params.schema;
      const operation = getOperationAST(params.documentAST, context.params?.operationName);
      if (!operation) return;
      const rootType =
        operation.operation === 'mutation' ? schema.getMutationType()
          : operation.operation === 'subscription' ? schema.getSubscriptionType()
            : schema.getQueryType();
      const fields = new Set<string>();
      rootFieldNames(params.documentAST, operation.selectionSet, fields);
      const required = [...fields].map((name) => rolesOf(rootType, name)).filter((r): r is readonly Role[] => r !== null);
      if (required.length === 0) return;
      const actor = actorOf(context.request, authenticate);
      if (!actor) throw authError('UNAUTHENTICATED', 'Unauthorized');
      if (!required.every((roles) => roles.some((role) => actor.roles.includes(role)))) throw authError('FORBIDDEN', 'Forbidden');
      if (operation.operation === 'mutation' && operation.selectionSet.selections.length !== 1) {
        throw new GraphQLError('a mutation request must have exactly one root field', { extensions: { code: 'BAD_REQUEST' } });
      }
    },
  };
}
