import { z } from 'zod';
import * as f from '../domain/fields.js';
import { type ConsoleSession, endConsoleSessionOperation, listConsoleSessions } from '../domain/sessions/console-sessions.js';
import { builder } from './builder.js';
import { RoleEnum } from './enums.js';
import { uuid } from './inputs.js';
import { defineMutation } from './mutation.js';
import { OPERATOR } from './roles.js';

const ConsoleSessionRef = builder.objectRef<ConsoleSession>('ConsoleSession').implement({
  description: "A person's console session after signing in through the OpenID provider.",
  fields: (t) => ({
    sessionId: t.field({ type: 'UUID', resolve: (s) => s.sessionId }),
    name: t.exposeString('name'),
    issuer: t.exposeString('issuer'),
    subject: t.exposeString('subject', { description: "The person's `sub` at the provider." }),
    roles: t.field({ type: [RoleEnum], resolve: (s) => s.roles }),
    createdAt: t.field({ type: 'DateTime', resolve: (s) => s.createdAt }),
    lastSeenAt: t.field({ type: 'DateTime', resolve: (s) => s.lastSeenAt }),
    expiresAt: t.field({ type: 'DateTime', resolve: (s) => s.expiresAt }),
  }),
});

builder.queryField('consoleSessions', (t) =>
  t.field({
    type: [ConsoleSessionRef],
    extensions: OPERATOR,
    description: 'The console sessions live now (signed in through the provider, not ended, not expired), newest first; at most 500.',
    complexity: { field: 1, multiplier: 100 },
    resolve: (_root, _args, ctx) => listConsoleSessions(ctx.services.db.prisma),
  }),
);

const EndConsoleSessionPayload = builder.objectRef<{ changed: boolean }>('EndConsoleSessionPayload').implement({
  fields: (t) => ({
    changed: t.exposeBoolean('changed', { description: 'false: no live session has that id (ended already, or never).' }),
  }),
});

defineMutation('endConsoleSession', {
  roles: OPERATOR,
  description:
    "Ends a person's console session at once: its next request is refused 401 (the CONSOLE_SESSION_ENDED event records who and why). " +
    'The person can sign in again while the provider lets them; take their access away there too.',
  input: z.object({ sessionId: uuid, reason: f.reason.describe('5 to 2000 characters.') }),
  payload: EndConsoleSessionPayload,
  operation: endConsoleSessionOperation,
});
