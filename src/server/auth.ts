import { timingSafeEqual } from 'node:crypto';
import { getOperationAST, GraphQLError, type GraphQLObjectType, type GraphQLSchema } from 'graphql';
import type { Plugin } from 'graphql-yoga';
import { tokenDigest } from '../auth/tokens.js';
import type { Config, Role } from '../config/config.js';
import type { Actor, RootFieldExtensions } from '../graphql/builder.js';
import { ERROR_HTTP_STATUS } from '../contract/errors.js';
import { operationShape } from './operation-shape.js';

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

function authError(code: 'UNAUTHENTICATED' | 'FORBIDDEN', message: string): GraphQLError {
  const headers: Record<string, string> = code === 'UNAUTHENTICATED' ? { 'WWW-Authenticate': 'Bearer' } : {};
  return new GraphQLError(message, { extensions: { code, http: { status: ERROR_HTTP_STATUS[code], headers } } });
}

function rolesOf(rootType: GraphQLObjectType | null | undefined, field: string): readonly Role[] | null {
  const extensions = rootType?.getFields()[field]?.extensions as Partial<RootFieldExtensions> | undefined;
  return extensions?.roles ?? null;
}

/**
 * Decides 403 from the operation's root fields before validation and variable coercion run, so a caller
 * without the right role learns nothing about its input (ref §3.0: auth wins over validation); a request
 * without a valid token never gets this far (the HTTP layer answers 401 before reading its body).
 * Mutations must have exactly one root field after fragment expansion: a NiFi request is one decision.
 */
export function useRootFieldAuth(): Plugin<{ actor: Actor | null; params: { operationName?: string } }> {
  return {
    // Throws rather than setting a validation result: Yoga caches validation results per document, and
    // an auth refusal must never be cached for the next caller of the same document.
    onValidate({ context, params }) {
      const schema: GraphQLSchema = params.schema;
      const operation = getOperationAST(params.documentAST, context.params?.operationName);
      if (!operation) return;
      const rootType =
        operation.operation === 'mutation'
          ? schema.getMutationType()
          : operation.operation === 'subscription'
            ? schema.getSubscriptionType()
            : schema.getQueryType();
      const { rootFields } = operationShape(params.documentAST, operation);
      const actor = context.actor;
      if (!actor) throw authError('UNAUTHENTICATED', 'Unauthorized');
      for (const name of new Set(rootFields.values())) {
        const roles = rolesOf(rootType, name);
        // which role the field needs is in the schema's descriptions already; the caller's roles are its own
        if (roles && !roles.some((role) => actor.roles.includes(role))) {
          throw authError('FORBIDDEN', `Forbidden: ${name} needs the ${roles.join(' or ')} role; this token has ${actor.roles.join(', ')}`);
        }
      }
      if (operation.operation === 'mutation' && rootFields.size !== 1) {
        throw new GraphQLError(`a mutation request must have exactly one root field; this one selects ${rootFields.size}`, {
          extensions: { code: 'BAD_REQUEST' },
        });
      }
    },
  };
}
