import type { z } from 'zod';
import * as f from '../domain/fields.js';
import { builder, type BuilderTypes, type GraphQLContext, type RootFieldExtensions } from './builder.js';
import { inputType } from './inputs.js';

const actorName = (ctx: GraphQLContext): string => ctx.actor?.name ?? 'anonymous';

interface Mutation<Input extends z.ZodObject, Result> {
  /** Who may call it: the auth plugin reads these from the field before validation. */
  roles: RootFieldExtensions;
  description?: string;
  /** The input's one declaration: it parses `input` into the command, and the input type `<Name>Input` is derived from it. */
  input: Input;
  payload: PothosSchemaTypes.ObjectRef<BuilderTypes, Result>;
  /** The domain call, given the parsed input and the caller's token name as `actor`. */
  run: (command: z.output<Input> & { actor: string }, ctx: GraphQLContext) => Promise<Result>;
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
      resolve: (_root, args, ctx) => mutation.run({ ...f.parseCommand(mutation.input, args.input), actor: actorName(ctx) }, ctx),
    }),
  );
}
