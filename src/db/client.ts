import pg from 'pg';
import { PrismaPg } from '@prisma/adapter-pg';
import { PrismaClient, type Prisma } from '../generated/prisma/client.js';

/** A transaction opened by the transaction helper; domain functions never open their own. */
export type Tx = Prisma.TransactionClient;

/** One pool shared by Prisma (through the pg adapter) and the single-statement hot paths. */
export interface Db {
  prisma: PrismaClient;
  pool: pg.Pool;
  close(): Promise<void>;
}

// NUMERIC and BIGINT arrive as strings from pg; the domain converts them where it needs numbers.
export function createDb(url: string, options: { poolSize?: number } = {}): Db {
  const pool = new pg.Pool({ connectionString: url, max: options.poolSize ?? 10 });
  // An idle client that loses its server must not crash the process; the next query reports it.
  pool.on('error', () => undefined);
  const prisma = new PrismaClient({ adapter: new PrismaPg(pool) });
  return {
    prisma,
    pool,
    async close() {
      await prisma.$disconnect();
      await pool.end().catch(() => undefined);
    },
  };
}
