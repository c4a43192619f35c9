import type { Role } from '../config/config.js';
import type { RootFieldExtensions } from './builder.js';

const roles = (...r: Role[]): RootFieldExtensions => ({ roles: r });

export const NIFI = roles('nifi');
export const OPERATOR = roles('operator');
export const NIFI_OR_OPERATOR = roles('nifi', 'operator');
/** Reads: any valid token. */
export const ANY_ROLE = roles('nifi', 'operator', 'viewer');
