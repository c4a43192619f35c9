import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DomainError } from '../../../src/contract/errors.js';
import { DISPATCH_CHANNEL, RUN_PROGRESS_CHANNEL } from '../../../src/db/channels.js';
import { createTestDatabase, type TestDatabase } from '../../support/database.js';
import { createDb, type Db } from '../../../src/db/client.js';
import { isRetryableConflict } from '../../../src/db/errors.js';
import { inStatement, inTransaction } from '../../../src/db/transaction.js';

let database: TestDatabase;
let db: Db;
beforeAll(async () => {
  database = await createTestDatabase();
  db = createDb(database.url, { poolSize: 4 });
});
afterAll(async () => {
  await db?.close();
  await database?.drop();
});

const raise = (sqlState: string) => `DO $$ BEGIN RAISE EXCEPTION 'forced' USING ERRCODE = '${sqlState}'; END $$`;

describe('bounded connections', () => {
  it('run with the configured statement timeout and without JIT, through Prisma and through pg alike', async () => {
    const settings = `SELECT current_setting('statement_timeout') AS statement_timeout, current_setting('jit') AS jit`;
    const expected = { statement_timeout: '5s', jit: 'off' };
    expect((await db.pool.query(settings)).rows).toEqual([expected]);
    expect(await inTransaction(db, (tx) => tx.$queryRawUnsafe(settings))).toEqual([expected]);
  });
});

describe('transaction helper', () => {
  it.each(['40P01', '40001'])('re-runs the whole transaction on %s and then answers SERVICE_UNAVAILABLE', async (sqlState) => {
    let attempts = 0;
    const run = inTransaction(
      db,
      async (tx) => {
        attempts++;
        await tx.$executeRawUnsafe(raise(sqlState));
      },
      { attempts: 4, baseDelayMs: 1 },
    );
    await expect(run).rejects.toMatchObject({ code: 'SERVICE_UNAVAILABLE', details: { reason: 'contention', attempts: 4 } });
    expect(attempts).toBe(4);
  });

  it('succeeds when a retry succeeds and keeps only the successful attempt', async () => {
    await db.pool.query('CREATE TEMP TABLE IF NOT EXISTS t_retry (n int)');
    await db.pool.query('CREATE TABLE IF NOT EXISTS public.t_retry (n int)');
    let attempts = 0;
    const result = await inTransaction(
      db,
      async (tx) => {
        attempts++;
        await tx.$executeRawUnsafe('INSERT INTO public.t_retry VALUES (1)');
        if (attempts < 3) await tx.$executeRawUnsafe(raise('40P01'));
        return 'done';
      },
      { attempts: 5, baseDelayMs: 1 },
    );
    expect(result).toBe('done');
    const { rows } = await db.pool.query('SELECT count(*)::int AS n FROM public.t_retry');
    expect(rows[0].n).toBe(1);
  });

  it('retries a real deadlock between two transactions', async () => {
    await db.pool.query('CREATE TABLE IF NOT EXISTS public.t_dead (id int primary key, v int)');
    await db.pool.query('INSERT INTO public.t_dead VALUES (1, 0), (2, 0) ON CONFLICT DO NOTHING');
    let attempts = 0;
    const lockInOrder = (first: number, second: number) =>
      inTransaction(
        db,
        async (tx) => {
          attempts++;
          await tx.$executeRawUnsafe(`UPDATE public.t_dead SET v = v + 1 WHERE id = ${first}`);
          await tx.$executeRawUnsafe('SELECT pg_sleep(0.2)');
          await tx.$executeRawUnsafe(`UPDATE public.t_dead SET v = v + 1 WHERE id = ${second}`);
        },
        { attempts: 5, baseDelayMs: 50 },
      );
    await Promise.all([lockInOrder(1, 2), lockInOrder(2, 1)]);
    expect(attempts).toBeGreaterThanOrEqual(3);
    const { rows } = await db.pool.query('SELECT sum(v)::int AS total FROM public.t_dead');
    expect(rows[0].total).toBe(4);
  });

  it('passes domain errors through untouched and does not retry them', async () => {
    let attempts = 0;
    await expect(
      inTransaction(db, async () => {
        attempts++;
        throw new DomainError('RUN_NOT_FOUND');
      }),
    ).rejects.toMatchObject({ code: 'RUN_NOT_FOUND' });
    expect(attempts).toBe(1);
  });

  it('retries single statements on the pool path too', async () => {
    let attempts = 0;
    await expect(
      inStatement(
        db,
        async (sql) => {
          attempts++;
          await sql.query(raise('40001'));
        },
        { attempts: 3, baseDelayMs: 1 },
      ),
    ).rejects.toMatchObject({ code: 'SERVICE_UNAVAILABLE' });
    expect(attempts).toBe(3);
  });

  it('recognises a write conflict reported at COMMIT by the Prisma adapter', () => {
    const atCommit = Object.assign(new Error('Transaction write conflict'), {
      name: 'DriverAdapterError',
      cause: { kind: 'TransactionWriteConflict' },
    });
    expect(isRetryableConflict(atCommit)).toBe(true);
    expect(isRetryableConflict(Object.assign(new Error('x'), { code: 'P2034' }))).toBe(true);
    expect(isRetryableConflict(new Error('other'))).toBe(false);
  });
});

describe('after-commit effects', () => {
  let listener: pg.Client;
  const received: Array<{ channel: string; payload: string }> = [];
  beforeAll(async () => {
    listener = new pg.Client({ connectionString: database.url });
    await listener.connect();
    listener.on('notification', (n) => received.push({ channel: n.channel, payload: n.payload ?? '' }));
    await listener.query(`LISTEN ${DISPATCH_CHANNEL}`);
    await listener.query(`LISTEN ${RUN_PROGRESS_CHANNEL}`);
    await db.pool.query('CREATE TABLE IF NOT EXISTS public.t_effects (marker text)');
  });
  afterAll(async () => {
    await listener?.end();
  });

  /** Everything notified so far: a marker notified last has arrived after all that came before it. */
  async function notified(): Promise<Array<{ channel: string; payload: string }>> {
    const marker = `settle-${randomUUID()}`;
    await db.pool.query('SELECT pg_notify($1, $2)', [DISPATCH_CHANNEL, marker]);
    for (let i = 0; i < 400 && !received.some((n) => n.payload === marker); i++) await new Promise((r) => setTimeout(r, 25));
    return received.splice(0).filter((n) => n.payload !== marker);
  }

  const committed = async (marker: string) =>
    (await db.pool.query('SELECT count(*)::int AS n FROM public.t_effects WHERE marker = $1', [marker])).rows[0].n;

  it('sends a declared wake-up only after the commit', async () => {
    await notified();
    const marker = randomUUID();
    let beforeCommit: unknown[] = [];
    const result = await inTransaction(db, async (tx, afterCommit) => {
      await tx.$executeRawUnsafe('INSERT INTO public.t_effects VALUES ($1)', marker);
      afterCommit.wakeDispatcher(marker);
      // a NOTIFY sent now would have arrived by the end of this pause
      await tx.$executeRawUnsafe('SELECT pg_sleep(0.2)');
      beforeCommit = [...received];
      return 'done';
    });
    expect(result).toBe('done');
    expect(beforeCommit).toEqual([]);
    expect(await notified()).toEqual([{ channel: DISPATCH_CHANNEL, payload: marker }]);
    expect(await committed(marker)).toBe(1);
  });

  it('sends nothing when the transaction rolls back', async () => {
    await notified();
    const marker = randomUUID();
    await expect(
      inTransaction(db, async (tx, afterCommit) => {
        await tx.$executeRawUnsafe('INSERT INTO public.t_effects VALUES ($1)', marker);
        afterCommit.wakeDispatcher(marker);
        afterCommit.runProgressed(marker);
        throw new DomainError('RUN_NOT_FOUND');
      }),
    ).rejects.toMatchObject({ code: 'RUN_NOT_FOUND' });
    expect(await notified()).toEqual([]);
    expect(await committed(marker)).toBe(0);
  });

  it('runs the effects of the attempt that committed, once, when a real deadlock re-runs the transaction', async () => {
    await notified();
    await db.pool.query('CREATE TABLE IF NOT EXISTS public.t_dead_effects (id int primary key, v int)');
    await db.pool.query('INSERT INTO public.t_dead_effects VALUES (1, 0), (2, 0) ON CONFLICT DO NOTHING');
    const attempts = { a: 0, b: 0 };
    const lockInOrder = (name: 'a' | 'b', first: number, second: number) =>
      inTransaction(
        db,
        async (tx, afterCommit) => {
          const attempt = ++attempts[name];
          afterCommit.wakeDispatcher(`${name}-${attempt}`);
          await tx.$executeRawUnsafe(`UPDATE public.t_dead_effects SET v = v + 1 WHERE id = ${first}`);
          await tx.$executeRawUnsafe('SELECT pg_sleep(0.2)');
          await tx.$executeRawUnsafe(`UPDATE public.t_dead_effects SET v = v + 1 WHERE id = ${second}`);
        },
        { attempts: 5, baseDelayMs: 50 },
      );
    await Promise.all([lockInOrder('a', 1, 2), lockInOrder('b', 2, 1)]);
    expect(attempts.a + attempts.b).toBeGreaterThanOrEqual(3);
    const payloads = (await notified()).map((n) => n.payload).sort();
    expect(payloads).toEqual([`a-${attempts.a}`, `b-${attempts.b}`]);
  });

  it('raises a declared error after the commit: what the transaction wrote stands, its other effects ran', async () => {
    await notified();
    const marker = randomUUID();
    let after = false;
    await expect(
      inTransaction(db, async (tx, afterCommit) => {
        await tx.$executeRawUnsafe('INSERT INTO public.t_effects VALUES ($1)', marker);
        afterCommit.wakeDispatcher(marker);
        afterCommit.raise(new DomainError('MANIFEST_INVALID', { violations: ['forced'] }, 'forced'));
        after = true;
      }),
    ).rejects.toMatchObject({ code: 'MANIFEST_INVALID', details: { violations: ['forced'] } });
    expect(after).toBe(false);
    expect(await committed(marker)).toBe(1);
    expect(await notified()).toEqual([{ channel: DISPATCH_CHANNEL, payload: marker }]);
  });

  it('answers what committed when a wake-up fails after the commit, and reports the failure aside', async () => {
    const failures: unknown[] = [];
    const other = createDb(database.url, { poolSize: 1, onNotifyError: (error) => failures.push(error) });
    try {
      const marker = randomUUID();
      const result = await inTransaction(other, async (tx, afterCommit) => {
        await tx.$executeRawUnsafe('INSERT INTO public.t_effects VALUES ($1)', marker);
        // NOTIFY refuses a payload of 8000 bytes or more
        afterCommit.wakeDispatcher('x'.repeat(9000));
        return 'done';
      });
      expect(result).toBe('done');
      expect(await committed(marker)).toBe(1);
      expect(failures).toEqual([expect.objectContaining({ message: expect.stringMatching(/payload string too long/) })]);
    } finally {
      await other.close();
    }
  });

  it('runs the effects of the pool path once its statement succeeded, not those of an attempt that failed', async () => {
    await notified();
    const runId = randomUUID();
    let attempts = 0;
    const result = await inStatement(
      db,
      async (sql, afterCommit) => {
        attempts++;
        afterCommit.wakeDispatcher(`attempt-${attempts}`);
        afterCommit.runProgressed(runId);
        if (attempts === 1) await sql.query(raise('40001'));
        return attempts;
      },
      { attempts: 3, baseDelayMs: 1 },
    );
    expect(result).toBe(2);
    expect(await notified()).toEqual(
      expect.arrayContaining([
        { channel: DISPATCH_CHANNEL, payload: 'attempt-2' },
        { channel: RUN_PROGRESS_CHANNEL, payload: runId },
      ]),
    );
  });
});
