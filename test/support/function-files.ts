// Compares a database's live SQL functions and triggers in nifi_ops with prisma/functions/*.sql, the one
// place each is defined: a body changed by hand, a function left behind by a retired definition or an
// overload added beside the file's shows up as a difference.
import pg from 'pg';
import { readFunctionFiles } from '../../src/db/migrate.js';

export interface FunctionFileDrift {
  /** Functions whose live body (prosrc) differs from the body in their file. */
  changedBodies: string[];
  /** Live functions no file defines (including a second overload of a defined name). */
  undefinedLive: string[];
  /** Functions a file defines that the database lacks. */
  missing: string[];
  /** Live triggers and file triggers that do not match (name on table → function). */
  triggerDifferences: string[];
}

interface DefinedFunction {
  name: string;
  file: string;
  body: string;
}

const FUNCTION_DEFINITION = /CREATE OR REPLACE FUNCTION nifi_ops\.(\w+)\s*\([\s\S]*?\bAS \$(\w*)\$([\s\S]*?)\$\2\$/g;
// a constraint trigger has no CREATE OR REPLACE: its file drops it first (05_gate_readiness.sql)
const TRIGGER_DEFINITION =
  /CREATE (?:OR REPLACE |CONSTRAINT )TRIGGER (\w+)[\s\S]*?\bON nifi_ops\.(\w+)[\s\S]*?EXECUTE FUNCTION nifi_ops\.(\w+)\(/g;

export async function definedInFiles(): Promise<{ functions: DefinedFunction[]; triggers: string[] }> {
  const functions: DefinedFunction[] = [];
  const triggers: string[] = [];
  for (const file of await readFunctionFiles()) {
    for (const match of file.sql.matchAll(FUNCTION_DEFINITION)) functions.push({ name: match[1]!, file: file.name, body: match[3]! });
    for (const match of file.sql.matchAll(TRIGGER_DEFINITION)) triggers.push(`${match[1]} on ${match[2]} → ${match[3]}`);
  }
  return { functions, triggers: triggers.sort() };
}

export async function readFunctionFileDrift(databaseUrl: string): Promise<FunctionFileDrift> {
  const defined = await definedInFiles();
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const { rows: live } = await client.query<{ name: string; body: string; signature: string }>(
      `SELECT p.proname AS name, p.prosrc AS body, format('%s(%s)', p.proname, pg_get_function_identity_arguments(p.oid)) AS signature
         FROM pg_proc p WHERE p.pronamespace = 'nifi_ops'::regnamespace ORDER BY 1, 3`,
    );
    const { rows: liveTriggers } = await client.query<{ description: string }>(
      `SELECT format('%s on %s → %s', t.tgname, c.relname, p.proname) AS description
         FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_proc p ON p.oid = t.tgfoid
        WHERE c.relnamespace = 'nifi_ops'::regnamespace AND NOT t.tgisinternal ORDER BY 1`,
    );
    const liveNames = new Set(live.map((fn) => fn.name));
    const changedBodies: string[] = [];
    const undefinedLive: string[] = [];
    for (const name of liveNames) {
      const overloads = live.filter((fn) => fn.name === name);
      const file = defined.functions.find((fn) => fn.name === name);
      // the file's definition is the overload with its body, or else the first: every other one is undefined
      const matching = overloads.find((fn) => fn.body === file?.body) ?? overloads[0]!;
      if (!file) undefinedLive.push(matching.signature);
      else if (matching.body !== file.body) changedBodies.push(`${matching.signature} (${file.file})`);
      for (const fn of overloads) if (fn !== matching) undefinedLive.push(fn.signature);
    }
    const fileTriggers = new Set(defined.triggers);
    const liveTriggerSet = new Set(liveTriggers.map((t) => t.description));
    return {
      changedBodies,
      undefinedLive,
      missing: defined.functions.filter((fn) => !liveNames.has(fn.name)).map((fn) => `${fn.name} (${fn.file})`),
      triggerDifferences: [
        ...defined.triggers.filter((t) => !liveTriggerSet.has(t)).map((t) => `missing: ${t}`),
        ...liveTriggers
          .map((t) => t.description)
          .filter((t) => !fileTriggers.has(t))
          .map((t) => `not in a file: ${t}`),
      ],
    };
  } finally {
    await client.end();
  }
}
