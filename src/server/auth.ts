import type { IncomingHttpHeaders } from 'node:http';
import { getOperationAST, GraphQLError, type GraphQLObjectType, type GraphQLSchema } from 'graphql';
import type { Plugin } from 'graphql-yoga';
import { looksLikeJwt, type VerifyJwt } from '../auth/jwt.js';
import type { Principal } from '../auth/principal.js';
import type { StaticTokens } from '../auth/static-tokens.js';
import type { Role } from '../config/config.js';
import type { Actor, RootFieldExtensions } from '../graphql/builder.js';
import { ERROR_HTTP_STATUS } from '../contract/errors.js';
import { operationShape } from './operation-shape.js';

/** What a request's credentials are read from: its headers (Authorization, Cookie) and its method. */
export interface CredentialedRequest {
  headers: IncomingHttpHeaders;
  method?: string | undefined;
}

/**
 * The principal a request acts as, or null (401). A static token is decided at once; a JWT or a session
 * needs a key or a row, so the answer may come later. Throws ProviderUnavailableError (503) when the
 * provider's keys cannot be had.
 */
export type Authenticate = (req: CredentialedRequest) => Principal | null | Promise<Principal | null>;

/** A console session's cookie, checked against its row (src/server/sign-in.ts); null when the request has none. */
export type SessionAuthenticate = (req: CredentialedRequest) => Promise<Principal | null> | null;

/**
 * Bearer tokens first: a static token by its SHA-256 digest (only digests are held), else, with auth.oidc, a
 * provider's JWT. Without an Authorization header, the console's session cookie.
 */
export function createAuthenticator(
  tokens: Pick<StaticTokens, 'find'>,
  { verifyJwt = null, session = null }: { verifyJwt?: VerifyJwt | null; session?: SessionAuthenticate | null } = {},
): Authenticate {
  return (req) => {
    const authorization = req.headers.authorization;
    if (authorization === undefined) return session?.(req) ?? null;
    const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
    if (!match) return null;
    const token = match[1]!;
    const found = tokens.find(token);
    if (found || !verifyJwt || !looksLikeJwt(token)) return found;
    return verifyJwt(token);
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
