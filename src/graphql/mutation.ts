import type { z } from 'zod';
import type { ActingAs } from '../auth/principal.js';
import { perform, type Operation } from '../db/operation.js';
import * as f from '../domain/fields.js';
import { builder, type BuilderTypes, type GraphQLContext, type RootFieldExtensions } from './builder.js';
import { inputType } from './inputs.js';

const actorName = (ctx: GraphQLContext): string => ctx.actor?.name ?? 'anonymous';

/** The parsed input, the caller's name as `actor` and, for the single-statement hot paths' own calls, who it is. */
type Command<Input extends z.ZodObject> = z.output<Input> & { actor: string; actingAs: ActingAs | null };

type Mutation<Input extends z.ZodObject, Result> = MutationShape<Input, Result> &
  (
    | {
        /** The domain operation, in its declared mode, given the parsed input and the caller's token name as `actor`. */
        operation: Operation<Command<Input>, Result>;
      }
    | {
        /** The domain call, for one that is more than an operation on the parsed input. */
        run: (command: Command<Input>, ctx: GraphQLContext) => Promise<Result>;
      }
  );

interface MutationShape<Input extends z.ZodObject, Result> {
  /** Who may call it: the auth plugin reads these from the field before validation. */
  roles: RootFieldExtensions;
  description?: string;
  /** The input's one declaration: it parses `input` into the command, and the input type `<Name>Input` is derived from it. */
  input: Input;
  payload: PothosSchemaTypes.ObjectRef<BuilderTypes, Result>;
}

/** A mutation `name(input: <Name>Input!): <Payload>`: input, validation, role and domain call declared in one place. */
export function defineMutation<Input extends z.ZodObject, Result>(name: string, mutation: Mutation<Input, Result>): void {
  const InputType = inputType(`${name[0]!.toUpperCase()}${name.slice(1)}Input`, mutation.input);
  builder.mutationField(name, (t) =>
    t.field({
      // run's result was checked against the payload above; Pothos cannot check a Result still generic here
      type: mutation.payload as PothosSchemaTypes.ObjectRef<BuilderTypes, unknown>,
      nullable: true,
      extensions: mutation.roles,
      description: mutation.description,
      args: { input: t.arg({ type: InputType, required: true }) },
      resolve: (_root, args, ctx) => {
        const command = { ...f.parseCommand(mutation.input, args.input), actor: actorName(ctx), actingAs: ctx.actor };
        return 'operation' in mutation ? perform(ctx.services.db, mutation.operation, command, ctx.actor) : mutation.run(command, ctx);
      },
    }),
  );
}
