import { Prisma, type PrismaClient } from '../generated/prisma/client.js';

/** How long a settled read stays shareable; far shorter than the run feed keeps its delivery times. */
const KEEP_MS = 2000;
/** A statement's text just before a value it filters one run by (`WHERE run_id = ${runId}::uuid`). */
const RUN_FILTER = /\brun_id = $/;

interface SharedRead {
  startedAt: number;
  result: Promise<unknown>;
}

const statementOf = (args: unknown[]): Prisma.Sql =>
  args[0] instanceof Prisma.Sql ? args[0] : Prisma.sql(args[0] as TemplateStringsArray, ...(args.slice(1) as Prisma.Sql[]));

/** The run a statement filters by equality, or null: only such reads are shared. */
function runOf(statement: Prisma.Sql): string | null {
  const at = statement.strings.findIndex((text, i) => i < statement.values.length && RUN_FILTER.test(text));
  const runId = at === -1 ? null : statement.values[at];
  return typeof runId === 'string' ? runId : null;
}

const key = (statement: Prisma.Sql) =>
  `${statement.sql}\u0000${JSON.stringify(statement.values, (_k, v) => (typeof v === 'bigint' ? `${v}n` : v))}`;

/**
 * The reader behind subscriptions' fields. After an event, every subscriber of that run resolves the
 * same nested fields (partitions, dispatches, events…): here they share one query. A read filtered by a
 * run id (`run_id = …`) is reused only if it started after that run's latest delivery (`deliveredAt`), so
 * what a subscriber is shown beside a run row is never older than the row. Other reads pass through.
 */
export function createSharedReader(prisma: PrismaClient, deliveredAt: (runId: string) => number): PrismaClient {
  const reads = new Map<string, SharedRead>();

  const queryRaw = (...args: unknown[]): Promise<unknown> => {
    const statement = statementOf(args);
    const runId = runOf(statement);
    if (runId === null) return prisma.$queryRaw(statement);
    const k = key(statement);
    const existing = reads.get(k);
    if (existing && existing.startedAt >= deliveredAt(runId)) return existing.result;
    const read: SharedRead = { startedAt: performance.now(), result: Promise.resolve(prisma.$queryRaw(statement)) };
    reads.set(k, read);
    const forget = () => {
      setTimeout(() => {
        if (reads.get(k) === read) reads.delete(k);
      }, KEEP_MS).unref();
    };
    read.result.then(forget, forget);
    return read.result;
  };

  return new Proxy(prisma, {
    get(target, prop, receiver) {
      if (prop === '$queryRaw') return queryRaw;
      const value = Reflect.get(target, prop, receiver) as unknown;
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}
