import type { Role } from '../config/config.js';
import { ROLES } from '../config/config.js';

/** How a request proved who it is: a static token, a provider's JWT (a machine), a console session (a person). */
export const AUTH_METHODS = ['TOKEN', 'JWT', 'SESSION'] as const;
export type AuthMethod = (typeof AUTH_METHODS)[number];

/** Who a request acts as, as the audit trail records it. */
export interface Principal {
  /** The static token's name, or the person's or client's name as the provider says it. */
  name: string;
  roles: readonly Role[];
  method: AuthMethod;
  /** The provider's issuer and the subject's `sub` there; null for a static token. */
  issuer: string | null;
  subject: string | null;
}

/** What the audit trail records of a principal besides its name (load_event.actor_auth, actor_issuer, actor_subject). */
export type ActingAs = Pick<Principal, 'method' | 'issuer' | 'subject'>;

/** An ActingAs as nifi_ops.acting_as's last three arguments (method, issuer, subject). */
export const actingAsValues = (actingAs: ActingAs | null | undefined): Array<string | null> =>
  actingAs ? [actingAs.method, actingAs.issuer, actingAs.subject] : [null, null, null];

/** The audit trail's column is 200 characters wide. */
const NAME_MAX = 200;

/** The name a provider's claims give a subject: a person's name and e-mail, else a client's id, else `sub`. */
export function nameFromClaims(claims: Record<string, unknown>): string {
  const text = (key: string) => (typeof claims[key] === 'string' && claims[key] !== '' ? (claims[key] as string) : null);
  const person = text('name') ?? text('preferred_username');
  const email = text('email');
  const name =
    person && email && person !== email
      ? `${person} <${email}>`
      : (person ?? email ?? text('client_id') ?? text('azp') ?? String(claims.sub));
  return name.slice(0, NAME_MAX);
}

/** The value at `path` (a claim name, or dotted: `realm_access.roles`) as a list of strings. */
function claimValues(claims: Record<string, unknown>, path: string): string[] {
  let value: unknown = claims;
  for (const segment of path.split('.')) {
    value = typeof value === 'object' && value !== null ? (value as Record<string, unknown>)[segment] : undefined;
  }
  if (typeof value === 'string') return value.split(' ').filter(Boolean);
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : [];
}

/** The roles the claim at `rolesClaim` grants through `roleMapping`; a value that is a role's own name grants it. */
export function rolesFromClaims(claims: Record<string, unknown>, rolesClaim: string, roleMapping: Record<string, readonly Role[]>): Role[] {
  const granted = new Set<Role>();
  for (const value of claimValues(claims, rolesClaim)) {
    for (const role of roleMapping[value] ?? []) granted.add(role);
    if ((ROLES as readonly string[]).includes(value)) granted.add(value as Role);
  }
  return ROLES.filter((role) => granted.has(role));
}
