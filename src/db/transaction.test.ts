import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DomainError } from '../domain/errors.js';
import { createTestDatabase, type TestDatabase } from '../../test/support/database.js';
import { createDb, type Db } from './client.js';
import { isRetryableConflict } from './errors.js';
import { inStatement, inTransaction } from './transaction.js';

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
    const run = inTransaction(db, async (tx) => {
      attempts++;
      await tx.$executeRawUnsafe(raise(sqlState));
    }, { attempts: 4, baseDelayMs: 1 });
    await expect(run).rejects.toMatchObject({ code: 'SERVICE_UNAVAILABLE', details: { reason: 'contention', attempts: 4 } });
    expect(attempts).toBe(4);
  });

  it('succeeds when a retry succeeds and keeps only the successful attempt', async () => {
    await db.pool.query('CREATE TEMP TABLE IF NOT EXISTS t_retry (n int)');
    await db.pool.query('CREATE TABLE IF NOT EXISTS public.t_retry (n int)');
    let attempts = 0;
    const result = await inTransaction(db, async (tx) => {
      attempts++;
      await tx.$executeRawUnsafe('INSERT INTO public.t_retry VALUES (1)');
      if (attempts < 3) await tx.$executeRawUnsafe(raise('40P01'));
      return 'done';
    }, { attempts: 5, baseDelayMs: 1 });
    expect(result).toBe('done');
    const { rows } = await db.pool.query('SELECT count(*)::int AS n FROM public.t_retry');
    expect(rows[0].n).toBe(1);
  });

  it('retries a real deadlock between two transactions', async () => {
    await db.pool.query('CREATE TABLE IF NOT EXISTS public.t_dead (id int primary key, v int)');
    await db.pool.query('INSERT INTO public.t_dead VALUES (1, 0), (2, 0) ON CONFLICT DO NOTHING');
    let attempts = 0;
    const lockInOrder = (first: number, second: number) => inTransaction(db, async (tx) => {
      attempts++;
      await tx.$executeRawUnsafe(`UPDATE public.t_dead SET v = v + 1 WHERE id = ${first}`);
      await tx.$executeRawUnsafe('SELECT pg_sleep(0.2)');
      await tx.$executeRawUnsafe(`UPDATE public.t_dead SET v = v + 1 WHERE id = ${second}`);
    }, { attempts: 5, baseDelayMs: 50 });
    await Promise.all([lockInOrder(1, 2), lockInOrder(2, 1)]);
    expect(attempts).toBeGreaterThanOrEqual(3);
    const { rows } = await db.pool.query('SELECT sum(v)::int AS total FROM public.t_dead');
    expect(rows[0].total).toBe(4);
  });

  it('passes domain errors through untouched and does not retry them', async () => {
    let attempts = 0;
    await expect(inTransaction(db, async () => {
      attempts++;
      throw new DomainError('RUN_NOT_FOUND');
    })).rejects.toMatchObject({ code: 'RUN_NOT_FOUND' });
    expect(attempts).toBe(1);
  });

  it('retries single statements on the pool path too', async () => {
    let attempts = 0;
    await expect(inStatement(db, async (sql) => {
      attempts++;
      await sql.query(raise('40001'));
    }, { attempts: 3, baseDelayMs: 1 })).rejects.toMatchObject({ code: 'SERVICE_UNAVAILABLE' });
    expect(attempts).toBe(3);
  });

  it('recognises a write conflict reported at COMMIT by the Prisma adapter', () => {
    const atCommit = Object.assign(new Error('Transaction write conflict'), { name: 'DriverAdapterError', cause: { kind: 'TransactionWriteConflict' } });
    expect(isRetryableConflict(atCommit)).toBe(true);
    expect(isRetryableConflict(Object.assign(new Error('x'), { code: 'P2034' }))).toBe(true);
    expect(isRetryableConflict(new Error('other'))).toBe(false);
  });
});
