// Every migration after 0009 (the last one 2efcf01 shipped) must apply to a live ledger: no table rewrite and
// no lock that holds load_run, load_partition or load_file for longer than a catalog update. A static check
// of the SQL, naming the file and line of each offence; the bad examples below prove each rule fires.
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../support/database.js';
import { migrate, readMigrationFiles, splitStatements, type MigrationFile } from '../../../src/db/migrate.js';

const LAST_SHIPPED_AT_2EFCF01 = '0009_report_chunks_group_commit';
/** Tables every chunk report and claim writes: a backfill's row locks on them stall the loads. */
const HOT_TABLES = new Set(['load_run', 'load_partition', 'load_file']);
/** Volatile functions: as a column default they make ADD COLUMN rewrite the table. */
const VOLATILE_CALL =
  /\b(CLOCK_TIMESTAMP|RANDOM|GEN_RANDOM_UUID|UUID_GENERATE_V\d\w*|NEXTVAL|TIMEOFDAY|TXID_CURRENT|PG_CURRENT_XACT_ID)\s*\(/i;

interface Statement {
  /** Comments removed, string and dollar-quoted bodies replaced by '…' and $…$, spaces collapsed. */
  text: string;
  line: number;
}

/** Splits SQL at top-level semicolons, aware of quotes, dollar quoting and comments. */
function statementsOf(sql: string): Statement[] {
  const statements: Statement[] = [];
  let text = '';
  let line = 1;
  let startLine = 0;
  const append = (chunk: string) => {
    if (startLine === 0 && chunk.trim() !== '') startLine = line;
    text += chunk;
  };
  const end = () => {
    const collapsed = text.replace(/\s+/g, ' ').trim();
    if (collapsed !== '') statements.push({ text: collapsed, line: startLine });
    text = '';
    startLine = 0;
  };
  const advance = (from: number, to: number) => {
    for (let k = from; k < to; k++) if (sql[k] === '\n') line++;
  };
  let i = 0;
  while (i < sql.length) {
    const rest = sql.slice(i);
    let skip: number;
    if (rest.startsWith('--')) {
      skip = rest.indexOf('\n') === -1 ? rest.length : rest.indexOf('\n');
      append(' ');
    } else if (rest.startsWith('/*')) {
      skip = rest.indexOf('*/') === -1 ? rest.length : rest.indexOf('*/') + 2;
      append(' ');
    } else if (rest[0] === "'") {
      // E'…' strings escape with backslashes
      const literal = (/e$/i.test(text) ? /^'(?:[^'\\]|\\.|'')*'/ : /^'(?:[^']|'')*'/).exec(rest);
      skip = literal ? literal[0].length : rest.length;
      append("'…'");
    } else if (rest[0] === '"') {
      const identifier = /^"(?:[^"]|"")*"/.exec(rest);
      skip = identifier ? identifier[0].length : rest.length;
      append(identifier ? identifier[0].slice(1, -1) : rest);
    } else if (/^\$[A-Za-z_]*\$/.test(rest)) {
      const tag = /^\$[A-Za-z_]*\$/.exec(rest)![0];
      const close = rest.indexOf(tag, tag.length);
      skip = close === -1 ? rest.length : close + tag.length;
      append('$…$');
    } else if (rest[0] === ';') {
      skip = 1;
      end();
    } else {
      skip = 1;
      append(rest[0]!);
    }
    advance(i, i + skip);
    i += skip;
  }
  end();
  return statements;
}

/** `nifi_ops.Load_Run` → load_run */
const tableName = (name: string) => name.split('.').at(-1)!.toLowerCase();

/** The actions of an ALTER TABLE, split at its top-level commas. */
function actionsOf(body: string): string[] {
  const actions: string[] = [];
  let depth = 0;
  let current = '';
  for (const char of body) {
    if (char === '(') depth++;
    if (char === ')') depth--;
    if (char === ',' && depth === 0) {
      actions.push(current.trim());
      current = '';
    } else {
      current += char;
    }
  }
  actions.push(current.trim());
  return actions;
}

interface PendingValidation {
  constraint: string;
  file: MigrationFile;
  line: number;
}

/** `path:line: what is wrong and what to write instead`, for each offence in these files (in apply order). */
function onlineSafetyViolations(files: MigrationFile[]): string[] {
  const violations: string[] = [];
  const notValidated = new Map<string, PendingValidation>();

  for (const file of files) {
    const at = (line: number, message: string) => violations.push(`${file.path}:${line}: ${message}`);
    const statements = statementsOf(file.sql);
    const createdHere = new Set<string>();
    const droppedIndexes = new Set<string>();
    const addedNotValidHere = new Set<string>();

    if (file.noTransaction) {
      // the runner sends each of its pieces as one query: two statements in one piece run as one implicit transaction
      let offset = 0;
      for (const piece of splitStatements(file.sql)) {
        const start = file.sql.indexOf(piece, offset);
        offset = start + piece.length;
        const inPiece = statementsOf(piece);
        if (inPiece.length > 1) {
          at(
            file.sql.slice(0, start).split('\n').length + inPiece[0]!.line - 1,
            'a no-transaction migration has one statement per piece ending in ";" at the end of a line',
          );
        }
      }
    }

    for (const { text, line } of statements) {
      const concurrently = /\bCONCURRENTLY\b/i.test(text);
      if (concurrently && !file.noTransaction) {
        at(line, 'CONCURRENTLY cannot run in a transaction: make the first line "-- load-control: no-transaction"');
      }

      const createTable = /^CREATE (?:UNLOGGED )?TABLE (?:IF NOT EXISTS )?([\w.]+)/i.exec(text);
      if (createTable) createdHere.add(tableName(createTable[1]!));

      const createIndex = /^CREATE (?:UNIQUE )?INDEX (CONCURRENTLY )?(?:IF NOT EXISTS )?([\w.]+ )?ON (?:ONLY )?([\w.]+)/i.exec(text);
      if (createIndex) {
        const [, isConcurrent, name, table] = createIndex;
        if (!isConcurrent && !createdHere.has(tableName(table!))) {
          at(line, `CREATE INDEX without CONCURRENTLY blocks writes to ${tableName(table!)} while it builds: CREATE INDEX CONCURRENTLY`);
        }
        if (isConcurrent && !(name && droppedIndexes.has(tableName(name.trim())))) {
          at(
            line,
            `an interrupted CREATE INDEX CONCURRENTLY leaves an invalid index: write DROP INDEX CONCURRENTLY IF EXISTS ${name ? tableName(name.trim()) : '<a name>'} before it`,
          );
        }
      }
      const dropIndex = /^DROP INDEX (CONCURRENTLY )?(?:IF EXISTS )?([\w.]+)/i.exec(text);
      if (dropIndex) {
        if (dropIndex[1]) droppedIndexes.add(tableName(dropIndex[2]!));
        else at(line, 'DROP INDEX without CONCURRENTLY waits for and blocks every query on its table: DROP INDEX CONCURRENTLY');
      }
      if (/^REINDEX\b/i.test(text) && !concurrently)
        at(line, 'REINDEX blocks writes to its table: REINDEX … CONCURRENTLY, or build a new index concurrently');
      if (/^VACUUM\b.*\bFULL\b/i.test(text)) at(line, 'VACUUM FULL rewrites the table under ACCESS EXCLUSIVE');
      if (/^CLUSTER\b/i.test(text)) at(line, 'CLUSTER rewrites the table under ACCESS EXCLUSIVE');
      if (/^LOCK\b/i.test(text)) at(line, 'LOCK TABLE holds the table until the migration ends');
      if (/^TRUNCATE\b/i.test(text)) at(line, 'TRUNCATE takes ACCESS EXCLUSIVE and throws the ledger away');
      const dml = /^(?:WITH .*? )?(UPDATE|DELETE FROM) (?:ONLY )?([\w.]+)/i.exec(text);
      if (dml && HOT_TABLES.has(tableName(dml[2]!))) {
        at(
          line,
          `${dml[1]} of ${tableName(dml[2]!)} locks the rows it touches until the migration commits: backfill in small batches outside the migration`,
        );
      }

      const alter = /^ALTER TABLE (?:IF EXISTS )?(?:ONLY )?([\w.]+) (.*)$/i.exec(text);
      if (!alter) continue;
      const table = tableName(alter[1]!);
      for (const action of actionsOf(alter[2]!)) {
        const constraint = /^ADD (?:CONSTRAINT ([\w.]+) )?(FOREIGN KEY|CHECK|UNIQUE|PRIMARY KEY|EXCLUDE)\b/i.exec(action);
        const validate = /^VALIDATE CONSTRAINT ([\w.]+)/i.exec(action);
        if (validate) {
          const name = `${table}.${validate[1]}`;
          if (addedNotValidHere.has(name) && !file.noTransaction) {
            at(
              line,
              `VALIDATE CONSTRAINT ${validate[1]} in the transaction that added it keeps the ADD's ACCESS EXCLUSIVE lock through the scan: validate in a later migration`,
            );
          }
          notValidated.delete(name);
          continue;
        }
        if (createdHere.has(table)) continue; // a table made in this file is empty and seen by no one yet
        if (constraint) {
          const [, name, kind] = constraint;
          if (kind === 'FOREIGN KEY' || kind === 'CHECK') {
            if (!/\bNOT VALID\b/i.test(action)) {
              at(
                line,
                `ADD ${kind} checks every row of ${table} under lock: ADD CONSTRAINT … NOT VALID, then VALIDATE CONSTRAINT in a later migration`,
              );
            } else if (!name) {
              at(line, `a NOT VALID ${kind} needs a name for its VALIDATE CONSTRAINT`);
            } else {
              notValidated.set(`${table}.${name}`, { constraint: name, file, line });
              addedNotValidHere.add(`${table}.${name}`);
            }
          } else if (!/\bUSING INDEX\b/i.test(action)) {
            at(
              line,
              `ADD ${kind} builds its index under ACCESS EXCLUSIVE on ${table}: CREATE UNIQUE INDEX CONCURRENTLY, then ADD CONSTRAINT … ${kind} USING INDEX`,
            );
          }
          continue;
        }
        const column = /^ADD (?:COLUMN )?(?:IF NOT EXISTS )?(\w+) (.*)$/i.exec(action);
        if (column && !/^ADD CONSTRAINT\b/i.test(action)) {
          const [, name, definition] = column;
          const defaultExpression = /\bDEFAULT (.*?)(?: NOT NULL| NULL| CHECK| REFERENCES| CONSTRAINT| COLLATE|$)/i.exec(definition!)?.[1];
          if (/^(SMALL|BIG)?SERIAL\b/i.test(definition!) || /\bGENERATED\b/i.test(definition!)) {
            at(line, `ADD COLUMN ${name} computes a value for every row: ${table} is rewritten`);
          } else if (defaultExpression !== undefined && VOLATILE_CALL.test(defaultExpression)) {
            at(line, `ADD COLUMN ${name} with a volatile default rewrites ${table}: add it without the default, then SET DEFAULT`);
          } else if (/\bNOT NULL\b/i.test(definition!) && defaultExpression === undefined) {
            at(line, `ADD COLUMN ${name} NOT NULL without a constant default fails on a non-empty ${table}: give it a constant default`);
          }
          if (/\bREFERENCES\b/i.test(definition!))
            at(line, `ADD COLUMN ${name} REFERENCES validates at once: add the column, then ADD CONSTRAINT … FOREIGN KEY … NOT VALID`);
          if (/\bCHECK\b/i.test(definition!))
            at(line, `ADD COLUMN ${name} with a CHECK scans ${table} under lock: ADD CONSTRAINT … CHECK … NOT VALID`);
          if (/\b(UNIQUE|PRIMARY KEY)\b/i.test(definition!))
            at(line, `ADD COLUMN ${name} with an index builds it under ACCESS EXCLUSIVE: CREATE UNIQUE INDEX CONCURRENTLY`);
          continue;
        }
        if (/^ALTER (?:COLUMN )?\w+ (?:SET DATA )?TYPE\b/i.test(action)) {
          at(line, `ALTER COLUMN … TYPE rewrites or scans ${table} under ACCESS EXCLUSIVE: add a new column and move the data in batches`);
        }
        if (/^ALTER (?:COLUMN )?\w+ SET NOT NULL\b/i.test(action)) {
          at(
            line,
            `SET NOT NULL scans ${table} under ACCESS EXCLUSIVE: ADD CONSTRAINT … CHECK (column IS NOT NULL) NOT VALID, then VALIDATE it in a later migration`,
          );
        }
        if (/^SET (LOGGED|UNLOGGED|TABLESPACE|ACCESS METHOD|WITHOUT OIDS)\b/i.test(action))
          at(line, `${action.split(' ').slice(0, 2).join(' ')} rewrites ${table}`);
      }
    }
  }
  for (const { constraint, file, line } of notValidated.values()) {
    violations.push(
      `${file.path}:${line}: constraint ${constraint} is NOT VALID and no later statement validates it: VALIDATE CONSTRAINT ${constraint} in a later migration`,
    );
  }
  const place = (violation: string) => /^(.*?):(\d+): /.exec(violation)!;
  return violations.sort((a, b) => {
    const [, pathA, lineA] = place(a);
    const [, pathB, lineB] = place(b);
    return pathA! < pathB! ? -1 : pathA! > pathB! ? 1 : Number(lineA) - Number(lineB);
  });
}

const databases: TestDatabase[] = [];
const dirs: string[] = [];
afterAll(async () => {
  await Promise.all(databases.map((database) => database.drop()));
  await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true })));
});

/** The files as the runner reads them (the no-transaction marker included). */
async function migrationFiles(files: Record<string, string>): Promise<MigrationFile[]> {
  const dir = await mkdtemp(join(tmpdir(), 'lc-online-safe-'));
  dirs.push(dir);
  for (const [name, sql] of Object.entries(files)) {
    await mkdir(join(dir, name));
    await writeFile(join(dir, name, 'migration.sql'), sql);
  }
  return readMigrationFiles(dir);
}

async function violationsOf(files: Record<string, string>): Promise<string[]> {
  const read = await migrationFiles(files);
  return onlineSafetyViolations(read).map((violation) => violation.slice(violation.indexOf('/', violation.indexOf('lc-online-safe-')) + 1));
}

const NO_TX = '-- load-control: no-transaction\n';

describe('migrations after 0009', () => {
  it('apply online: no table rewrite, no long lock', async () => {
    const files = (await readMigrationFiles()).filter((file) => file.name > LAST_SHIPPED_AT_2EFCF01);
    const violations = onlineSafetyViolations(files);
    expect(violations, violations.join('\n')).toEqual([]);
  });

  it('run with a lock_timeout of 5 s and no statement_timeout, in a transaction and outside one', async () => {
    const database = await createTestDatabase({ empty: true });
    databases.push(database);
    const [first] = await migrationFiles({
      '0001_seen': `CREATE TABLE public.seen AS SELECT 'transaction' AS mode, current_setting('lock_timeout') AS lock_timeout,
  current_setting('statement_timeout') AS statement_timeout;`,
      '0002_seen_outside': `${NO_TX}INSERT INTO public.seen SELECT 'none', current_setting('lock_timeout'), current_setting('statement_timeout');`,
    });
    const dir = join(first!.path, '..', '..');

    await migrate(database.url, { migrationsDir: dir, functionsDir: join(dir, 'no-functions') });

    const client = new pg.Client({ connectionString: database.url });
    await client.connect();
    try {
      expect((await client.query('SELECT * FROM public.seen ORDER BY mode DESC')).rows).toEqual([
        { mode: 'transaction', lock_timeout: '5s', statement_timeout: '0' },
        { mode: 'none', lock_timeout: '5s', statement_timeout: '0' },
      ]);
    } finally {
      await client.end();
    }
  });
});

describe('the online-safety check', () => {
  it('finds the offline steps of the migrations 2efcf01 shipped: an index built on load_run, one rebuilt on load_partition', async () => {
    const files = (await readMigrationFiles()).filter((file) => file.name <= LAST_SHIPPED_AT_2EFCF01);

    const violations = onlineSafetyViolations(files).map((violation) => violation.slice(violation.indexOf('prisma/migrations/')));

    expect(violations.map((violation) => violation.slice(0, violation.indexOf(' without')))).toEqual([
      'prisma/migrations/0003_business_date_gate/migration.sql:82: CREATE INDEX',
      'prisma/migrations/0007_hot_updates/migration.sql:7: DROP INDEX',
      'prisma/migrations/0007_hot_updates/migration.sql:8: CREATE INDEX',
    ]);
  });

  it('accepts the safe forms', async () => {
    expect(
      await violationsOf({
        '0010_columns': [
          'ALTER TABLE nifi_ops.load_run ADD COLUMN purged_at timestamptz;',
          "ALTER TABLE nifi_ops.load_run ADD COLUMN retention text NOT NULL DEFAULT 'P90D', ADD COLUMN flags integer DEFAULT 0;",
          'ALTER TABLE nifi_ops.load_run ADD COLUMN noted_at timestamptz DEFAULT now();',
          'ALTER TABLE nifi_ops.load_run ALTER COLUMN purged_at SET DEFAULT clock_timestamp();',
          'ALTER TABLE nifi_ops.load_file ADD CONSTRAINT load_file_rows_ck CHECK (record_count >= 0) NOT VALID;',
          'CREATE TABLE nifi_ops.purge_cursor (run_id uuid PRIMARY KEY, at timestamptz NOT NULL DEFAULT clock_timestamp());',
          'CREATE INDEX purge_cursor_at ON nifi_ops.purge_cursor (at);',
          'ALTER TABLE nifi_ops.purge_cursor ADD CONSTRAINT purge_cursor_run_fk FOREIGN KEY (run_id) REFERENCES nifi_ops.load_run (run_id);',
          "UPDATE nifi_ops.gate SET consumer = consumer WHERE consumer = 'a;b';",
          'CREATE FUNCTION nifi_ops.f() RETURNS int LANGUAGE sql AS $$ SELECT 1; ALTER TABLE nifi_ops.load_run ALTER COLUMN x TYPE int $$;',
        ].join('\n'),
        '0011_index': [
          NO_TX.trimEnd(),
          'DROP INDEX CONCURRENTLY IF EXISTS nifi_ops.ix_load_run_ended;',
          'CREATE INDEX CONCURRENTLY ix_load_run_ended ON nifi_ops.load_run (ended_at)',
          '  WHERE ended_at IS NOT NULL;',
          'ALTER TABLE nifi_ops.load_file VALIDATE CONSTRAINT load_file_rows_ck;',
        ].join('\n'),
      }),
    ).toEqual([]);
  });

  it.each([
    [
      'CREATE INDEX ix ON nifi_ops.load_partition (run_id);',
      '0010_bad/migration.sql:2: CREATE INDEX without CONCURRENTLY blocks writes to load_partition',
    ],
    [
      'CREATE UNIQUE INDEX IF NOT EXISTS ix ON ONLY nifi_ops.load_file (hdfs_path);',
      ':2: CREATE INDEX without CONCURRENTLY blocks writes to load_file',
    ],
    ['DROP INDEX nifi_ops.ix;', ':2: DROP INDEX without CONCURRENTLY'],
    ['REINDEX INDEX nifi_ops.ix;', ':2: REINDEX blocks writes'],
    [
      'ALTER TABLE nifi_ops.load_partition\n  ADD CONSTRAINT fk FOREIGN KEY (run_id) REFERENCES nifi_ops.load_run (run_id);',
      ':2: ADD FOREIGN KEY checks every row of load_partition',
    ],
    ['ALTER TABLE nifi_ops.load_run ADD CHECK (source_count >= 0);', ':2: ADD CHECK checks every row of load_run'],
    ['ALTER TABLE nifi_ops.load_run ADD CHECK (source_count >= 0) NOT VALID;', ':2: a NOT VALID CHECK needs a name'],
    [
      'ALTER TABLE nifi_ops.load_run ADD CONSTRAINT uq UNIQUE (job_key, business_key);',
      ':2: ADD UNIQUE builds its index under ACCESS EXCLUSIVE on load_run',
    ],
    ['ALTER TABLE nifi_ops.load_run ADD PRIMARY KEY (run_id);', ':2: ADD PRIMARY KEY builds its index'],
    ['ALTER TABLE nifi_ops.load_run ALTER COLUMN status TYPE varchar(80);', ':2: ALTER COLUMN … TYPE rewrites or scans load_run'],
    ['ALTER TABLE nifi_ops.load_run ALTER status SET DATA TYPE text;', ':2: ALTER COLUMN … TYPE rewrites or scans load_run'],
    ['ALTER TABLE nifi_ops.load_run ALTER COLUMN job_key SET NOT NULL;', ':2: SET NOT NULL scans load_run'],
    ['ALTER TABLE nifi_ops.load_run ADD COLUMN purged boolean NOT NULL;', ':2: ADD COLUMN purged NOT NULL without a constant default'],
    [
      'ALTER TABLE nifi_ops.load_run ADD COLUMN token uuid NOT NULL DEFAULT gen_random_uuid();',
      ':2: ADD COLUMN token with a volatile default rewrites load_run',
    ],
    ['ALTER TABLE nifi_ops.load_run ADD COLUMN seen timestamptz DEFAULT clock_timestamp();', ':2: ADD COLUMN seen with a volatile default'],
    ['ALTER TABLE nifi_ops.load_run ADD COLUMN n bigserial;', ':2: ADD COLUMN n computes a value for every row'],
    [
      'ALTER TABLE nifi_ops.load_run ADD COLUMN total bigint GENERATED ALWAYS AS (source_count * 2) STORED;',
      ':2: ADD COLUMN total computes a value',
    ],
    [
      'ALTER TABLE nifi_ops.load_file ADD COLUMN batch_id uuid REFERENCES nifi_ops.load_run (run_id);',
      ':2: ADD COLUMN batch_id REFERENCES validates at once',
    ],
    ['ALTER TABLE nifi_ops.load_file ADD COLUMN size bigint CHECK (size >= 0);', ':2: ADD COLUMN size with a CHECK scans load_file'],
    ['ALTER TABLE nifi_ops.load_file ADD COLUMN key text UNIQUE;', ':2: ADD COLUMN key with an index'],
    ['ALTER TABLE nifi_ops.load_event SET UNLOGGED;', ':2: SET UNLOGGED rewrites load_event'],
    ['ALTER TABLE nifi_ops.load_event SET TABLESPACE slow;', ':2: SET TABLESPACE rewrites load_event'],
    ['VACUUM (FULL, ANALYZE) nifi_ops.load_file;', ':2: VACUUM FULL rewrites'],
    ['CLUSTER nifi_ops.load_file USING load_file_pkey;', ':2: CLUSTER rewrites'],
    ['LOCK TABLE nifi_ops.load_run IN SHARE MODE;', ':2: LOCK TABLE holds'],
    ['TRUNCATE nifi_ops.load_event;', ':2: TRUNCATE takes ACCESS EXCLUSIVE'],
    ["UPDATE nifi_ops.load_partition SET status = 'ABANDONED' WHERE status = 'PENDING';", ':2: UPDATE of load_partition locks the rows'],
    ['WITH old AS (SELECT 1) DELETE FROM nifi_ops.load_file;', ':2: DELETE FROM of load_file locks the rows'],
  ])('refuses %s', async (statement, expected) => {
    const violations = await violationsOf({ '0010_bad': `-- a bad example\n${statement}\n` });
    expect(violations).toHaveLength(1);
    expect(violations[0]).toContain(expected);
  });

  it('refuses a VALIDATE in the transaction that added the constraint, and a NOT VALID constraint never validated', async () => {
    expect(
      await violationsOf({
        '0010_same_transaction': [
          'ALTER TABLE nifi_ops.load_file ADD CONSTRAINT rows_ck CHECK (record_count >= 0) NOT VALID;',
          'ALTER TABLE nifi_ops.load_file VALIDATE CONSTRAINT rows_ck;',
        ].join('\n'),
        '0011_never':
          '\n\nALTER TABLE nifi_ops.load_partition ADD CONSTRAINT run_fk FOREIGN KEY (run_id) REFERENCES nifi_ops.load_run (run_id) NOT VALID;',
      }),
    ).toEqual([
      "0010_same_transaction/migration.sql:2: VALIDATE CONSTRAINT rows_ck in the transaction that added it keeps the ADD's ACCESS EXCLUSIVE lock through the scan: validate in a later migration",
      '0011_never/migration.sql:3: constraint run_fk is NOT VALID and no later statement validates it: VALIDATE CONSTRAINT run_fk in a later migration',
    ]);
  });

  it('refuses a concurrent build in a transaction, one without the DROP before it, and two statements in one piece of a no-transaction file', async () => {
    expect(
      await violationsOf({
        '0009_in_transaction':
          'DROP INDEX CONCURRENTLY IF EXISTS nifi_ops.ix;\nCREATE INDEX CONCURRENTLY ix ON nifi_ops.load_run (status);\n',
        '0010_index': [
          NO_TX.trimEnd(),
          'DROP INDEX CONCURRENTLY IF EXISTS nifi_ops.ix_other;',
          'CREATE INDEX CONCURRENTLY ix_run_status ON nifi_ops.load_run (status);',
          'CREATE INDEX CONCURRENTLY ON nifi_ops.load_run (job_key);',
          'DROP INDEX CONCURRENTLY IF EXISTS nifi_ops.ix_a; CREATE INDEX CONCURRENTLY ix_a ON nifi_ops.load_run (status);',
        ].join('\n'),
      }),
    ).toEqual([
      '0009_in_transaction/migration.sql:1: CONCURRENTLY cannot run in a transaction: make the first line "-- load-control: no-transaction"',
      '0009_in_transaction/migration.sql:2: CONCURRENTLY cannot run in a transaction: make the first line "-- load-control: no-transaction"',
      '0010_index/migration.sql:3: an interrupted CREATE INDEX CONCURRENTLY leaves an invalid index: write DROP INDEX CONCURRENTLY IF EXISTS ix_run_status before it',
      '0010_index/migration.sql:4: an interrupted CREATE INDEX CONCURRENTLY leaves an invalid index: write DROP INDEX CONCURRENTLY IF EXISTS <a name> before it',
      '0010_index/migration.sql:5: a no-transaction migration has one statement per piece ending in ";" at the end of a line',
    ]);
  });

  it('reads no keyword inside a comment, a string or a quoted identifier', async () => {
    expect(
      await violationsOf({
        '0010_quiet': [
          '-- CREATE INDEX ix ON nifi_ops.load_run (status);',
          '/* VACUUM FULL nifi_ops.load_run; */',
          "COMMENT ON TABLE nifi_ops.gate IS 'never LOCK TABLE nifi_ops.load_run; nor CLUSTER it';",
          "COMMENT ON TABLE nifi_ops.gate_observation IS E'it\\'s; VACUUM FULL nifi_ops.load_run';",
          'ALTER TABLE nifi_ops.gate ADD COLUMN "lock" text;',
        ].join('\n'),
      }),
    ).toEqual([]);
  });
});
