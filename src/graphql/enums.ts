import { ROLES } from '../config/config.js';
import { AUTH_METHODS } from '../auth/principal.js';
import { EVENT_LEVELS } from '../domain/events/events.js';
import { DISPATCH_STATUSES, DISPATCH_TYPES, PARTITION_STATUSES, RUN_ACTIONS, RUN_STATUSES } from '../domain/states.js';
import { builder } from './builder.js';

export const RunStatusEnum = builder.enumType('RunStatus', { values: RUN_STATUSES });
export const RunActionEnum = builder.enumType('RunAction', {
  description: "An operator's action on a run (cancelRun, resolveUnknown, reissuePartition, resendDispatch)",
  values: RUN_ACTIONS,
});
export const PartitionStatusEnum = builder.enumType('PartitionStatus', { values: PARTITION_STATUSES });
export const DispatchStatusEnum = builder.enumType('DispatchStatus', { values: DISPATCH_STATUSES });
export const DispatchTypeEnum = builder.enumType('DispatchType', { values: DISPATCH_TYPES });
export const EventLevelEnum = builder.enumType('EventLevel', { values: EVENT_LEVELS });
export const RoleEnum = builder.enumType('Role', { values: ROLES });
export const AuthMethodEnum = builder.enumType('AuthMethod', {
  values: AUTH_METHODS,
  description: "TOKEN: a static token (auth.tokens, auth.tokensFile); JWT: an OpenID provider's access token; SESSION: a console sign-in.",
});
