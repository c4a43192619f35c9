import type { Actor } from './builder.js';
import { builder } from './builder.js';
import { AuthMethodEnum, RoleEnum } from './enums.js';
import { ANY_ROLE } from './roles.js';

const MeRef = builder.objectRef<Actor>('Me').implement({
  description:
    "Who is signed in: a token's name in auth.tokens, or the person's or client's name at the OpenID provider, and the roles granted.",
  fields: (t) => ({
    name: t.exposeString('name'),
    roles: t.field({ type: [RoleEnum], resolve: (actor) => [...actor.roles] }),
    authenticatedBy: t.field({ type: AuthMethodEnum, resolve: (actor) => actor.method }),
  }),
});

builder.queryField('me', (t) =>
  t.field({
    type: MeRef,
    extensions: ANY_ROLE,
    description: 'Who the request is signed in as (the console shows it, and hides what the roles do not allow).',
    // the auth plugin refused the request before this runs when there is no actor
    resolve: (_root, _args, ctx) => ctx.actor!,
  }),
);
