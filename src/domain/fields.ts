// Patterns, lengths and ranges of every input field, checked before the database is touched so that
// malformed input is a 422 INVALID_INPUT and never a database error (ref §3.0, §12.2.2).
import { z } from 'zod';
import { JOB_KEY_PATTERN } from '../config/source-pools.js';
import { invalidInput } from '../contract/errors.js';

const INT32_MAX = 2_147_483_647;
const BIGINT_MAX = 2n ** 63n - 1n;

export const jobKey = z.string().regex(JOB_KEY_PATTERN, `must match ${JOB_KEY_PATTERN.source}`);
export const businessKey = z.string().regex(/^[0-9A-Za-z_.:-]{1,200}$/, 'must match ^[0-9A-Za-z_.:-]{1,200}$');
export const partitionId = z.string().regex(/^([0-9]{4}|NULL)$/, 'must be four digits or NULL');
export const tablePrefix = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]{0,60}$/, 'must match ^[A-Za-z_][A-Za-z0-9_]{0,60}$');
/**
 * The one rule for an HDFS path the ledger takes (a run's root, a chunk's file, a deleted directory): absolute,
 * of [A-Za-z0-9_.=/-], at most `max` characters. Whether it climbs out with a `..` segment is each field's own
 * refusal (INVALID_HDFS_ROOT, HDFS_PATH_OUTSIDE_RUN, INVALID_INPUT), decided with climbsOut.
 */
export const hdfsPath = (max: number) =>
  z
    .string()
    .regex(new RegExp(`^/[A-Za-z0-9_.=/-]{0,${max - 1}}$`), `must be an absolute path of [A-Za-z0-9_.=/-], at most ${max} characters`);
/** A `..` segment: the path leaves the directory it starts in. */
export const climbsOut = (path: string): boolean => path.split('/').includes('..');
/** Free text stored in varchar(n): n characters at most. */
export const text = (max: number) => z.string().max(max, `at most ${max} characters`);
export const requiredText = (max: number) => z.string().min(1, 'must not be empty').max(max, `at most ${max} characters`);
/** Why an operator acted: recorded with the token's name in the event log. */
export const reason = z.string().trim().min(5, 'at least 5 characters').max(2000, 'at most 2000 characters');
/** A non-negative 64-bit count (the Long scalar already parsed it to a bigint). */
export const count = z.bigint().min(0n, 'must be >= 0').max(BIGINT_MAX, 'out of range');
export const int32 = (min: number, max = INT32_MAX) =>
  z
    .union([z.bigint(), z.number()])
    .transform((v) => Number(v))
    .pipe(z.number().int().min(min, `must be >= ${min}`).max(max, `must be <= ${max}`));
export const jsonObject = z.record(z.string(), z.unknown()).refine((v) => JSON.stringify(v).length <= 65_536, 'at most 64 KiB of JSON');

/** At most this many tags on a run. */
export const MAX_TAGS = 10;
const TAG = /^([a-z][a-z0-9_.-]{0,39})=([A-Za-z0-9_.:/@+-]{1,100})$/;
/**
 * Tags as they are written everywhere (createRun, the runs filter, the CLI's --tag, NiFi's LOAD.TAGS parameter):
 * `key=value` pairs separated by commas, at most MAX_TAGS, each key once; a key is lower case
 * (^[a-z][a-z0-9_.-]{0,39}$), a value ^[A-Za-z0-9_.:/@+-]{1,100}$. Empty: no tags. Parsed into key → value.
 */
export const tags = z
  .string()
  .max(MAX_TAGS * 142, 'too long for the tags allowed')
  .transform((written, ctx): Record<string, string> => {
    const pairs = written
      .split(',')
      .map((pair) => pair.trim())
      .filter((pair) => pair !== '');
    if (pairs.length > MAX_TAGS) ctx.addIssue({ code: 'custom', message: `at most ${MAX_TAGS} tags` });
    const parsed: Record<string, string> = {};
    for (const pair of pairs) {
      const match = TAG.exec(pair);
      if (!match) {
        ctx.addIssue({
          code: 'custom',
          message: `${JSON.stringify(pair.slice(0, 50))} is not key=value (key ^[a-z][a-z0-9_.-]{0,39}$, value ^[A-Za-z0-9_.:/@+-]{1,100}$)`,
        });
      } else if (match[1]! in parsed) {
        ctx.addIssue({ code: 'custom', message: `the tag ${match[1]} is given twice` });
      } else {
        parsed[match[1]!] = match[2]!;
      }
    }
    return Object.fromEntries(Object.entries(parsed).sort(([a], [b]) => (a < b ? -1 : 1)));
  });

/** An optional field: absent or null becomes `fallback`. */
export const optional = <S extends z.ZodType, F = null>(schema: S, fallback: F = null as F) =>
  schema.nullish().transform((v): NonNullable<z.output<S>> | F => v ?? fallback);
/** The same, declared as the field's default (the GraphQL schema shows it). */
export const withDefault = <T extends {}>(schema: z.ZodType<T>, value: T) =>
  // zod types a default as Awaited<output>, which TypeScript cannot reduce to T while T is a parameter
  optional(schema, value).default(value as z.core.util.NoUndefined<Awaited<T>>);

/**
 * Parses a command with its schema; the first problem becomes INVALID_INPUT naming the field, as a path
 * under `root` (or the bare path, for arguments named on their own).
 */
// Strings PostgreSQL cannot store (NUL, lone surrogates) and over-deep JSON were refused before execution
// (src/server/storable-inputs.ts).
export function parseCommand<S extends z.ZodType>(schema: S, value: unknown, root: string | null = 'input'): z.output<S> {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const issue = result.error.issues[0]!;
  const path = issue.path.map(String);
  throw invalidInput((root === null ? path : [root, ...path]).join('.'), issue.message);
}
