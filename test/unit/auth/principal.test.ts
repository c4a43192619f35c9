import { describe, expect, it } from 'vitest';
import { nameFromClaims, rolesFromClaims } from '../../../src/auth/principal.js';

describe('rolesFromClaims', () => {
  it('maps claim values through roleMapping, takes values that are role names as they are, and ignores the rest', () => {
    const mapping = { 'lc-operators': ['operator', 'viewer'] as const, 'lc-nifi': ['nifi'] as const };
    expect(rolesFromClaims({ groups: ['lc-operators', 'staff'] }, 'groups', mapping)).toEqual(['operator', 'viewer']);
    expect(rolesFromClaims({ roles: ['viewer', 'lc-nifi'] }, 'roles', mapping)).toEqual(['nifi', 'viewer']);
    expect(rolesFromClaims({ realm_access: { roles: ['lc-nifi'] } }, 'realm_access.roles', mapping)).toEqual(['nifi']);
    expect(rolesFromClaims({ scope: 'openid viewer' }, 'scope', {})).toEqual(['viewer']);
    expect(rolesFromClaims({ roles: 'admin' }, 'roles', mapping)).toEqual([]);
    expect(rolesFromClaims({}, 'groups', mapping)).toEqual([]);
    expect(rolesFromClaims({ groups: [1, null, { a: 1 }] }, 'groups', mapping)).toEqual([]);
  });
});

describe('nameFromClaims', () => {
  it('names a person by name and e-mail, a machine by its client id, and falls back to sub', () => {
    expect(nameFromClaims({ sub: 's', name: 'Alice Smith', email: 'alice@example.com' })).toBe('Alice Smith <alice@example.com>');
    expect(nameFromClaims({ sub: 's', email: 'alice@example.com' })).toBe('alice@example.com');
    expect(nameFromClaims({ sub: 's', preferred_username: 'alice' })).toBe('alice');
    expect(nameFromClaims({ sub: 's', client_id: 'nifi-node' })).toBe('nifi-node');
    expect(nameFromClaims({ sub: 'only-sub' })).toBe('only-sub');
    expect(nameFromClaims({ sub: 's', name: 'x'.repeat(300) })).toHaveLength(200);
  });
});
