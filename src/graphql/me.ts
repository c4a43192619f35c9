import { ROLES } from '../config/config.js';
import type { Actor } from './builder.js';
import { builder } from './builder.js';
import { ANY_ROLE } from './roles.js';

const RoleEnum = builder.enumType('Role', { values: ROLES });

const MeRef = builder.objectRef<Actor>('Me').implement({
  description: "The token's holder: its name in auth.tokens and the roles it grants.",
  fields: (t) => ({
    name: t.exposeString('name'),
    roles: t.field({ type: [RoleEnum], resolve: (actor) => [...actor.roles] }),
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
