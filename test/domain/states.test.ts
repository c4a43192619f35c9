import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { createDb, type Db } from '../../src/db/client.js';
import { readFunctionFiles } from '../../src/db/migrate.js';
import { inTransaction } from '../../src/db/transaction.js';
import { Prisma } from '../../src/generated/prisma/client.js';
import { ATTEMPT_SOURCES } from '../../src/domain/gate/ledger.js';
import { OBSERVATION_STATES } from '../../src/domain/gate/observation-states.js';
import { createRun } from '../../src/domain/runs/create-run.js';
import * as states from '../../src/domain/states.js';
import {
  TransitionNotAllowedError,
  transitionDispatch,
  transitionFiles,
  transitionPartition,
  transitionRun,
  transitionBackfill,
  transitionBackfillDate,
} from '../../src/domain/transitions.js';

const TABLE_STATUSES: Record<string, readonly string[]> = {
  load_run: states.RUN_STATUSES,
  load_partition: states.PARTITION_STATUSES,
  load_dispatch: states.DISPATCH_STATUSES,
  load_file: states.FILE_STATUSES,
};

/**
 * What each status-holding name of the SQL functions is the status of: columns read into variables and
 * records, result columns, and the lists declared as constants. A new name that holds a status fails the test
 * until it is classified here.
 */
const STATUS_SUBJECTS: Record<string, string> = {
  run_status: 'load_run',
  current_run_status: 'load_run',
  'run_row.status': 'load_run',
  'totals.status': 'load_run',
  partition_status: 'load_partition',
  'part.status': 'load_partition',
  'p.status': 'load_partition',
  'moved.status': 'load_partition',
  'counted.status': 'load_partition',
  'old_file.status': 'load_file',
  // the from/to of a RUN_FAILED event's details
  'details.from': 'load_run',
  'details.to': 'load_run',
  claimable_partition_statuses: 'load_partition',
  ackable_dispatch_statuses: 'load_dispatch',
  // how a run status reads as an observation (05_gate_readiness.sql run_observation_state)
  p_status: 'load_run',
  // a run's move (06_lineage.sql lineage_event_type)
  p_from: 'load_run',
  p_to: 'load_run',
  failed_run_statuses: 'load_run',
};

/** Names whose literals are not statuses (outcomes, event fields, types), and the words they may hold. */
const OTHER_SUBJECTS: Record<string, readonly string[]> = {
  outcome: [
    'OK',
    'RUN_NOT_FOUND',
    'PARTITION_NOT_FOUND',
    'POOL_FULL',
    'DEFERRED',
    'PROGRESS',
    'IGNORED',
    'PARTITION_SUCCESS',
    'PARTITION_FAILED',
    'RUN_COMPLETE',
    'CLAIM_MISMATCH',
    'HDFS_PATH_OUTSIDE_RUN',
    'CHUNK_CONFLICT',
  ],
  partition_outcome: ['SUCCESS', 'FAILED'],
  dispatch_type: states.DISPATCH_TYPES,
  // the gate's observation states (src/domain/gate/observation-states.ts), not statuses of a ledger table
  observation_state: OBSERVATION_STATES,
  'r.state': OBSERVATION_STATES,
  // OpenLineage's eventType of a run's move (06_lineage.sql)
  lineage_event_type: states.LINEAGE_EVENT_TYPES,
  event_type: states.LINEAGE_EVENT_TYPES,
  TG_OP: ['INSERT', 'UPDATE'],
};

/** Every other upper-case word the function files may hold: event levels, names and codes, stages, the API's name. */
const OTHER_WORDS = [
  'INFO',
  'WARN',
  'ERROR',
  'PARTITION_STARTED',
  'PARTITION_SUCCESS',
  'PARTITION_FAILED',
  'RUN_FAILED',
  'EXTRACT_VALIDATED',
  'ROW_COUNT_MISMATCH',
  'PARTITION_GATE',
  'LOAD_CONTROL_API',
  ...states.DISPATCH_TYPES,
  // where a gate's attempt comes from (src/domain/gate/ledger.ts)
  ...ATTEMPT_SOURCES,
];

interface Literal {
  word: string;
  subject: string | null;
  /** The table the statement writes or reads first, for a bare `status`. */
  table: string | null;
}

const LITERAL = /'([A-Z][A-Z0-9_]*)'/g;

/** Top-level comma-separated items of a list (parentheses and quotes respected), with their offsets. */
function splitItems(text: string, offset: number): Array<{ text: string; at: number }> {
  const items: Array<{ text: string; at: number }> = [];
  let depth = 0;
  let quoted = false;
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === "'") quoted = !quoted;
    else if (!quoted && c === '(') depth++;
    else if (!quoted && c === ')') depth--;
    else if (!quoted && depth === 0 && c === ',') {
      items.push({ text: text.slice(start, i), at: offset + start });
      start = i + 1;
    }
  }
  items.push({ text: text.slice(start), at: offset + start });
  return items;
}

/**
 * The status literals of one SQL function body, each with what it is compared with, assigned to or
 * returned as. Comparisons (`x = 'A'`, `x IN ('A', 'B')`, `x := 'A'`, a constant ARRAY[…]) name their
 * subject directly; a literal in a SET list, a SELECT … INTO, a RETURN QUERY SELECT or an INSERT's values
 * is the subject of its position.
 */
function statusLiterals(body: string, resultColumns: string[]): Literal[] {
  const code = body.replace(/--[^\n]*/g, (comment) => ' '.repeat(comment.length));
  const found: Literal[] = [];
  for (const statement of code.split(';')) {
    const table = /\b(?:UPDATE|INSERT INTO|FROM)\s+nifi_ops\.(load_\w+)/.exec(statement)?.[1] ?? null;
    // the table an UPDATE's SET list or an INSERT's column list belongs to: the nearest before it
    const tableBefore = (position: number) =>
      [...statement.slice(0, position).matchAll(/\b(?:UPDATE|INSERT INTO)\s+nifi_ops\.(\w+)/g)].at(-1)?.[1];
    const column = (position: number, name: string) => (name === 'status' ? `${tableBefore(position)}.status` : name);
    const subjects = new Map<number, string>();
    const name = (position: number, subject: string) => {
      if (!subjects.has(position)) subjects.set(position, subject);
    };
    const literalsIn = (text: string, offset: number, subject: string) => {
      for (const m of text.matchAll(LITERAL)) name(offset + m.index, subject);
    };

    for (const m of statement.matchAll(/([\w.]+)\s*(?:=|<>|!=|:=)\s*'[A-Z]/g)) name(m.index + m[0].length - 2, m[1]!);
    for (const m of statement.matchAll(/([\w.]+)\s+(?:NOT\s+)?IN\s*\(([^()]*)\)/g)) {
      literalsIn(m[2]!, m.index + m[0].indexOf('(') + 1, m[1]!);
    }
    for (const m of statement.matchAll(/(\w+)\s+CONSTANT\s+text\[\]\s*:=\s*ARRAY\[([^\]]*)\]/g)) {
      literalsIn(m[2]!, m.index + m[0].indexOf('ARRAY[') + 6, m[1]!);
    }
    for (const m of statement.matchAll(/(\w+)\s*:=\s*CASE\b[\s\S]*?\bEND\b/g)) literalsIn(m[0], m.index, m[1]!);
    for (const m of statement.matchAll(/'(from|to)',\s*'[A-Z]/g)) name(m.index + m[0].length - 2, `details.${m[1]}`);
    for (const m of statement.matchAll(/\bSET\s+([\s\S]*?)(?=\bWHERE\b|\bFROM\b|\bRETURNING\b|$)/g)) {
      for (const item of splitItems(m[1]!, m.index + m[0].indexOf(m[1]!))) {
        const assigned = /^\s*(\w+)\s*=/.exec(item.text)?.[1];
        if (assigned) literalsIn(item.text, item.at, column(item.at, assigned));
      }
    }
    const positional = (list: string, listAt: number, names: string[]) => {
      splitItems(list, listAt).forEach((item, i) => {
        if (names[i]) literalsIn(item.text, item.at, names[i]!);
      });
    };
    for (const m of statement.matchAll(/\bSELECT\s+((?:(?!\bSELECT\b)[\s\S])*?)\s+(?<!INSERT\s+)INTO\s+([\w\s,]+?)(?=\s+FROM\b|\s*$)/g)) {
      positional(
        m[1]!,
        m.index + m[0].indexOf(m[1]!),
        m[2]!.split(',').map((s) => s.trim()),
      );
    }
    for (const m of statement.matchAll(/\bRETURN\s+QUERY\s+SELECT\s+([\s\S]*?)(?=\s+FROM\b|$)/g)) {
      positional(m[1]!, m.index + m[0].indexOf(m[1]!), resultColumns);
    }
    for (const m of statement.matchAll(
      /\bINSERT INTO nifi_ops\.\w+(?:\s+AS\s+\w+)?\s*\(([^)]*)\)\s*(?:VALUES\s*\(([\s\S]*?)\)\s*(?:ON\b|RETURNING\b|$)|SELECT\s+([\s\S]*?)\s+FROM\b)/g,
    )) {
      const list = m[2] ?? m[3]!;
      positional(
        list,
        m.index + m[0].indexOf(list),
        m[1]!.split(',').map((c) => column(m.index + m[0].indexOf('('), c.trim())),
      );
    }

    for (const m of statement.matchAll(LITERAL)) {
      found.push({ word: m[1]!, subject: subjects.get(m.index) ?? null, table });
    }
  }
  return found;
}

/** Why a literal does not belong where it stands, or null when it does. */
function misplaced(literal: Literal): string | null {
  const { word, subject, table } = literal;
  const statusOf =
    subject === 'status' ? table : subject === null ? null : (/^(load_\w+)\.status$/.exec(subject)?.[1] ?? STATUS_SUBJECTS[subject]);
  if (statusOf) return TABLE_STATUSES[statusOf]?.includes(word) ? null : `'${word}' is not a status of ${statusOf}`;
  if (subject !== null && /status/.test(subject)) return `'${word}': ${subject} holds a status of a table this test does not know`;
  if (subject !== null && OTHER_SUBJECTS[subject]) {
    return OTHER_SUBJECTS[subject]!.includes(word) ? null : `'${word}' is not a value of ${subject}`;
  }
  return OTHER_WORDS.includes(word) ? null : `'${word}' (${subject ?? 'no subject'}) is a word this test does not know`;
}

const FUNCTION_HEADER =
  /CREATE OR REPLACE FUNCTION nifi_ops\.(\w+)\s*\(([\s\S]*?)\)\s*(?:RETURNS\s+(?:TABLE\s*\(([\s\S]*?)\)|\w+))?[\s\S]*?\bAS \$(\w*)\$([\s\S]*?)\$\4\$/g;

async function functionBodies(): Promise<Array<{ name: string; file: string; body: string; resultColumns: string[] }>> {
  const bodies = [];
  for (const file of await readFunctionFiles()) {
    for (const m of file.sql.matchAll(FUNCTION_HEADER)) {
      const outParameters = [...m[2]!.matchAll(/\bOUT\s+(\w+)/g)].map((o) => o[1]!);
      const tableColumns = m[3] ? m[3].split(',').map((c) => c.trim().split(/\s+/)[0]!) : [];
      bodies.push({ name: m[1]!, file: file.name, body: m[5]!, resultColumns: [...tableColumns, ...outParameters] });
    }
  }
  return bodies;
}

describe('the SQL functions speak the statuses of states.ts', () => {
  it('uses only statuses of the right table, and only known words elsewhere', async () => {
    const bodies = await functionBodies();
    expect(bodies.map((b) => b.name)).toContain('claim_partition');
    const problems: string[] = [];
    let statusLiteralCount = 0;
    for (const fn of bodies) {
      for (const literal of statusLiterals(fn.body, fn.resultColumns)) {
        const problem = misplaced(literal);
        if (problem) problems.push(`${fn.file} ${fn.name}: ${problem}`);
        if (literal.subject && /status|^details\./.test(literal.subject)) statusLiteralCount++;
      }
    }
    expect(problems).toEqual([]);
    // the parse found the statuses where they are: comparisons, SET lists, INTO and RETURN QUERY positions
    expect(statusLiteralCount).toBeGreaterThan(30);
  });

  it('finds a status of the wrong table in each place a status literal may stand', () => {
    const wrong = [
      "UPDATE nifi_ops.load_partition SET status = 'EXTRACTING' WHERE run_id = p_run_id",
      "UPDATE nifi_ops.load_dispatch SET acked_at = now() WHERE status IN ('PENDING', 'RUNNING')",
      "IF run_row.status = 'RUNNING' THEN RETURN; END IF",
      "SELECT 'OK', 'EXTRACTING' INTO outcome, partition_status",
      "RETURN QUERY SELECT 1, 'OK', 'PENDING', 'SENT'",
      "INSERT INTO nifi_ops.load_file (run_id, status) VALUES (p_run_id, 'PENDING')",
      "claimable_partition_statuses CONSTANT text[] := ARRAY['PENDING', 'SENT']",
      "UPDATE nifi_ops.load_partition p SET status = CASE WHEN p.received_chunks = 1 THEN 'DEAD' ELSE p.status END",
    ];
    for (const sql of wrong) {
      const problems = statusLiterals(sql, ['ordinal', 'outcome', 'partition_status', 'run_status']).map(misplaced).filter(Boolean);
      expect(problems, sql).toHaveLength(1);
    }
    expect(statusLiterals("SELECT 'RUNNIN' INTO run_status", []).map(misplaced)).toEqual(["'RUNNIN' is not a status of load_run"]);
    expect(statusLiterals("PERFORM nifi_ops.record_api_event('INFO', 'PARTITON_STARTED')", []).map(misplaced)).toEqual([
      null,
      "'PARTITON_STARTED' (no subject) is a word this test does not know",
    ]);
  });

  it('declares the status lists of states.ts under their names, with the same members', async () => {
    const declared = (await readFunctionFiles()).flatMap((file) =>
      [...file.sql.matchAll(/(\w+_statuses)\s+CONSTANT\s+text\[\]\s*:=\s*ARRAY\[([^\]]*)\]/g)].map((m) => ({
        name: m[1]!.toUpperCase(),
        members: [...m[2]!.matchAll(LITERAL)].map((l) => l[1]),
      })),
    );
    expect(declared.map((d) => d.name).sort()).toEqual([
      'ACKABLE_DISPATCH_STATUSES',
      'CLAIMABLE_PARTITION_STATUSES',
      'FAILED_RUN_STATUSES',
    ]);
    for (const { name, members } of declared) expect(members, name).toEqual([...((states as Record<string, unknown>)[name] as string[])]);
  });
});

describe('the live constraints and partial indexes hold the lists of states.ts', () => {
  let database: TestDatabase;
  let client: pg.Client;
  beforeAll(async () => {
    database = await createTestDatabase();
    client = new pg.Client({ connectionString: database.url });
    await client.connect();
  });
  afterAll(async () => {
    await client?.end();
    await database?.drop();
  });

  const literalsOf = (sql: string) => [...sql.matchAll(LITERAL)].map((m) => m[1]!).sort();

  it('has CHECK constraints that allow exactly the statuses (and dispatch types) of each table', async () => {
    const { rows } = await client.query<{ table: string; name: string; definition: string }>(
      `SELECT c.conrelid::regclass::text AS table, c.conname AS name, pg_get_constraintdef(c.oid) AS definition
         FROM pg_constraint c
        WHERE c.connamespace = 'nifi_ops'::regnamespace AND c.contype = 'c' AND c.conname ~ '_(status|type)$'
        ORDER BY 2`,
    );
    expect(Object.fromEntries(rows.map((r) => [r.name, literalsOf(r.definition)]))).toEqual({
      ck_load_dispatch_lineage_event_type: [...states.LINEAGE_EVENT_TYPES].sort(),
      ck_load_backfill_date_status: [...states.BACKFILL_DATE_STATUSES].sort(),
      ck_load_backfill_status: [...states.BACKFILL_STATUSES].sort(),
      ck_load_dispatch_status: [...states.DISPATCH_STATUSES].sort(),
      ck_load_dispatch_type: [...states.DISPATCH_TYPES].sort(),
      ck_load_file_status: [...states.FILE_STATUSES].sort(),
      ck_load_partition_status: [...states.PARTITION_STATUSES].sort(),
      ck_load_run_status: [...states.RUN_STATUSES].sort(),
    });
  });

  it('makes the lineage event of every run move that lineageEventType makes, and none for the others', async () => {
    const moves = states.RUN_TRANSITIONS.map(([from, to]) => ({ from, to, expected: states.lineageEventType(from, to) }));
    const { rows } = await client.query<{ event: string | null }>(
      `SELECT nifi_ops.lineage_event_type(m.from_status, m.to_status) AS event
         FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS m(from_status, to_status, n) ORDER BY m.n`,
      [moves.map((m) => m.from), moves.map((m) => m.to)],
    );
    expect(rows.map((r) => r.event)).toEqual(moves.map((m) => m.expected));
    // every lineage moment of OpenLineage's run cycle is reached by some move
    expect(new Set(moves.map((m) => m.expected).filter(Boolean))).toEqual(new Set(states.LINEAGE_EVENT_TYPES));
  });

  it('has partial indexes over exactly the status lists the code queries them with', async () => {
    const { rows } = await client.query<{ table: string; name: string; predicate: string }>(
      `SELECT tablename AS table, indexname AS name, substring(indexdef from ' WHERE (.*)$') AS predicate
         FROM pg_indexes
        WHERE schemaname = 'nifi_ops' AND tablename IN ('load_run', 'load_partition', 'load_dispatch')
          AND indexdef ~ ' WHERE .*\\mstatus\\M'
        ORDER BY 2`,
    );
    const expected: Record<string, readonly string[]> = {
      uq_load_run_active: states.ACTIVE_RUN_STATUSES,
      // the purge's next runs: not a SUCCESS run nobody cleaned up (src/domain/retention/purge.ts)
      ix_load_run_purge: ['SUCCESS'],
      ix_load_partition_unfinished: states.UNFINISHED_PARTITION_STATUSES,
      // the sweeper's stale RUNNING partitions and its PENDING ones nobody claimed (src/domain/sweeper/stale-partitions.ts)
      ix_load_partition_recovery: ['RUNNING', 'RETRY'],
      ix_load_partition_pending: ['PENDING'],
      ix_load_dispatch_due: states.UNDELIVERED_DISPATCH_STATUSES,
      ix_load_dispatch_backlog: states.BACKLOG_DISPATCH_STATUSES,
    };
    expect(Object.fromEntries(rows.map((r) => [r.name, literalsOf(r.predicate)]))).toEqual(
      Object.fromEntries(Object.entries(expected).map(([name, list]) => [name, [...list].sort()])),
    );
    for (const row of rows) for (const word of literalsOf(row.predicate)) expect(TABLE_STATUSES[row.table], row.name).toContain(word);
  });
});

describe('the transition functions', () => {
  let database: TestDatabase;
  let db: Db;
  beforeAll(async () => {
    database = await createTestDatabase();
    db = createDb(database.url, { poolSize: 2 });
  });
  afterAll(async () => {
    await db?.close();
    await database?.drop();
  });

  it('refuse a move states.ts does not have before any statement is sent', async () => {
    await inTransaction(db, async (tx) => {
      // a statement with this key would fail in the database (22P02); the refusal comes first
      const key = 'not-a-uuid';
      await expect(transitionRun(tx, { runId: key }, { from: ['SUCCESS'], to: 'CREATED' })).rejects.toThrow(TransitionNotAllowedError);
      await expect(transitionRun(tx, { runId: key }, { from: ['CREATED', 'PUBLISHED'], to: 'EXTRACTING' })).rejects.toThrow(
        'load_run: no transition CREATED|PUBLISHED → EXTRACTING in states.ts',
      );
      await expect(transitionRun(tx, { runId: key }, { from: [], to: 'CANCELLED' })).rejects.toThrow(TransitionNotAllowedError);
      await expect(transitionPartition(tx, { runId: key }, { from: ['SUCCESS'], to: 'RETRY' })).rejects.toThrow(TransitionNotAllowedError);
      await expect(transitionDispatch(tx, { dispatchId: key }, { from: ['ACKED'], to: 'PENDING' })).rejects.toThrow(
        TransitionNotAllowedError,
      );
      await expect(transitionDispatch(db.pool, { dispatchId: key }, { from: ['CANCELLED'], to: 'SENT' })).rejects.toThrow(
        TransitionNotAllowedError,
      );
      await expect(transitionFiles(tx, { runId: key, partitionId: '0000' }, { from: ['VERIFIED'], to: 'FAILED' })).rejects.toThrow(
        TransitionNotAllowedError,
      );
      await expect(transitionBackfill(tx, { backfillId: key }, { from: ['COMPLETED'], to: 'RUNNING' })).rejects.toThrow(
        'load_backfill: no transition COMPLETED → RUNNING in states.ts',
      );
      await expect(transitionBackfillDate(tx, { backfillId: key }, { from: ['SKIPPED'], to: 'STARTING' })).rejects.toThrow(
        TransitionNotAllowedError,
      );
      // the transaction is intact: nothing reached the database
      expect(await tx.$queryRaw`SELECT 1 AS one`).toEqual([{ one: 1 }]);
    });
  });

  it("move a row only from the allowed statuses, with its stamps and event, in the caller's transaction", async () => {
    const { runId } = await inTransaction(db, (tx, afterCommit) =>
      createRun(
        tx,
        {
          jobKey: 'STATES_TEST',
          businessKey: 'BK_1',
          hdfsRoot: '/data/states',
          stageTablePrefix: 'TMP_STATES_',
          allowEmptySource: false,
          parameters: {},
          idempotencyKey: null,
          actor: 'states-test',
        },
        afterCommit,
      ),
    );
    const row = async () =>
      (
        await db.pool.query(`SELECT status, version_no, error_code, completed_at, heartbeat_at FROM nifi_ops.load_run WHERE run_id = $1`, [
          runId,
        ])
      ).rows[0];
    const cancelled = async () =>
      (await db.pool.query(`SELECT actor FROM nifi_ops.load_event WHERE run_id = $1 AND event_name = 'RUN_CANCELLED'`, [runId])).rows;
    const move = {
      to: 'CANCELLED' as const,
      set: Prisma.sql`error_code = ${'RUN_CANCELLED'}`,
      returning: Prisma.sql`t.run_id::text, t.version_no`,
      event: { level: 'WARN' as const, name: 'RUN_CANCELLED', runId, actor: 'states-test' },
    };

    // not in `from`: nothing moves and no event is written
    expect(await inTransaction(db, (tx) => transitionRun(tx, { runId }, { ...move, from: ['EXTRACTING'] }))).toEqual([]);
    // a transaction that rolls back takes the move and its event with it
    await expect(
      inTransaction(db, async (tx) => {
        await transitionRun(tx, { runId }, { ...move, from: ['CREATED'] });
        throw new Error('rolled back');
      }),
    ).rejects.toThrow('rolled back');
    const created = await row();
    expect(created).toMatchObject({ status: 'CREATED', version_no: 0, error_code: null, completed_at: null });
    expect(await cancelled()).toEqual([]);

    const moved = await inTransaction(db, (tx) => transitionRun(tx, { runId }, { ...move, from: ['CREATED', 'EXTRACTING'] }));
    expect(moved).toEqual([{ run_id: runId, version_no: 1 }]);
    const ended = await row();
    expect(ended).toMatchObject({ status: 'CANCELLED', version_no: 1, error_code: 'RUN_CANCELLED' });
    expect(ended.completed_at).toBeInstanceOf(Date);
    expect(ended.heartbeat_at.getTime()).toBeGreaterThan(created.heartbeat_at.getTime());
    expect(await cancelled()).toEqual([{ actor: 'states-test' }]);
  });
});
