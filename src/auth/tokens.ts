import { createHash, randomBytes } from 'node:crypto';
import { stringify } from 'yaml';
import { ROLES, type Role } from '../config/config.js';

/** One `auth.tokens` entry: the configuration holds the digest, never the token. */
export interface TokenEntry {
  name: string;
  sha256: string;
  roles: Role[];
}

const TOKEN_PREFIX = 'lc_';

/** SHA-256 of the token's UTF-8 bytes: what a request's bearer token is compared by. */
export function tokenDigest(token: string): Buffer {
  return createHash('sha256').update(token, 'utf8').digest();
}

/** tokenDigest in lower-case hex, as the configuration holds it. */
export function hashToken(token: string): string {
  return tokenDigest(token).toString('hex');
}

/** A new random token: `lc_` followed by 32 random bytes in base64url (43 characters). */
export function generateToken(): string {
  return TOKEN_PREFIX + randomBytes(32).toString('base64url');
}

/** Builds the configuration entry for `token`; throws on an empty or over-long name or an unknown role. */
export function tokenConfigEntry(name: string, roles: readonly string[], token: string): TokenEntry {
  if (name.length < 1 || name.length > 200) {
    throw new Error(`token name must be 1 to 200 characters, got ${name.length}`);
  }
  if (token.length === 0) {
    throw new Error('token must not be empty');
  }
  if (roles.length === 0) {
    throw new Error(`a token needs at least one role (${ROLES.join(', ')})`);
  }
  const unknown = roles.filter((role) => !isRole(role));
  if (unknown.length > 0) {
    throw new Error(`unknown role ${unknown.map((r) => JSON.stringify(r)).join(', ')} (expected ${ROLES.join(', ')})`);
  }
  return { name, sha256: hashToken(token), roles: [...new Set(roles.filter(isRole))] };
}

/** The YAML list item to add under `auth.tokens`. */
export function formatTokenEntry(entry: TokenEntry): string {
  return stringify([{ name: entry.name, sha256: entry.sha256, roles: entry.roles }]);
}

function isRole(value: string): value is Role {
  return (ROLES as readonly string[]).includes(value);
}
