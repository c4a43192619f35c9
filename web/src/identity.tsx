import { createContext, useContext, useMemo, type ReactNode } from 'react';
import { ME, type Role } from './api/operations';
import { useQuery } from './api/typed';

interface Identity {
  name: string;
  roles: Role[];
}

type IdentityState = { identity: Identity | null; error: string | null };

const IdentityContext = createContext<IdentityState>({ identity: null, error: null });

/** Who the token belongs to (`me`), read once per sign-in: the header shows it, actions follow its roles. */
export function IdentityProvider({ children }: { children: ReactNode }) {
  const { data, error } = useQuery(ME, {});
  const state = useMemo(() => ({ identity: data?.me ?? null, error }), [data, error]);
  return <IdentityContext.Provider value={state}>{children}</IdentityContext.Provider>;
}

export const useIdentity = (): IdentityState => useContext(IdentityContext);

/** Why the signed-in token may not act as an operator, or null when it may. */
export function operatorDenial({ identity, error }: IdentityState): string | null {
  if (identity?.roles.includes('operator')) return null;
  if (!identity) return error ? `Your roles could not be read (${error}).` : 'Reading your roles…';
  return `Needs the operator role; ${identity.name} has ${identity.roles.join(', ') || 'no role'}.`;
}
