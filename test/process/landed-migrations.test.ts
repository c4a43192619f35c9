// A migration that has landed is never edited: a database migrated with it would refuse every later
// upgrade (MigrationChecksumError). Needs the clone's git history; without it the test fails, never skips.
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';

const run = promisify(execFile);
const MIGRATIONS = 'prisma/migrations';
const repositoryRoot = fileURLToPath(new URL('../..', import.meta.url));

/**
 * Migrations edited after they landed, before this test existed; each is pinned to the commit that gave it
 * the content it must keep from now on.
 */
const GRANDFATHERED: Record<string, string> = {
  // Landed at 478ff5c and changed in place three times (27c73c2, 1d23054, 204b688, the last only a comment):
  // a database migrated at any commit from 478ff5c up to 204b688 fails the upgrade with
  // MigrationChecksumError. Its file is frozen as of 204b688.
  '0008_report_chunk_fast_path/migration.sql': '204b688de248036eebfa1d0a8da577ea3f2671b9',
  // Landed at a536bd6 and changed in place at 92bdd38 ("it has not been released"): a database migrated
  // at a536bd6..92bdd38^ fails the upgrade the same way. Frozen as of 92bdd38.
  '0009_report_chunks_group_commit/migration.sql': '92bdd388466ce5e3bcc66fe4ced406121f10550c',
};

interface LandedMigrationChange {
  /** Path relative to the repository root. */
  path: string;
  /** The commit whose content the file must have. */
  commit: string;
  change: 'edited' | 'deleted';
}

async function git(repository: string, args: string[]): Promise<string> {
  try {
    const { stdout } = await run('git', args, { cwd: repository, maxBuffer: 64 * 1024 * 1024, encoding: 'buffer' });
    return stdout.toString('utf8');
  } catch (error) {
    const failure = error as NodeJS.ErrnoException & { stderr?: Buffer };
    if (failure.code === 'ENOENT') {
      throw new Error('git is not installed: the landed-migrations check compares prisma/migrations with the git history');
    }
    throw new Error(`git ${args.join(' ')} failed in ${repository}: ${failure.stderr?.toString('utf8').trim() || failure.message}`);
  }
}

async function gitBytes(repository: string, args: string[]): Promise<Buffer> {
  const { stdout } = await run('git', args, { cwd: repository, maxBuffer: 64 * 1024 * 1024, encoding: 'buffer' });
  return stdout;
}

/**
 * Every file under prisma/migrations that landed — arrived on the first-parent line of HEAD, so a merge
 * counts as the landing of what its branch added — and whose working-tree bytes differ from that landing
 * (or from its pin in GRANDFATHERED), or which is gone. Files with no such commit are new and allowed.
 */
async function landedMigrationChanges(repository: string): Promise<LandedMigrationChange[]> {
  const root = (await git(repository, ['rev-parse', '--show-toplevel'])).trim();
  if ((await git(root, ['rev-parse', '--is-shallow-repository'])).trim() === 'true') {
    throw new Error(
      `${root} is a shallow clone: the landed-migrations check needs the whole history (git fetch --unshallow, or clone without --depth)`,
    );
  }
  // Newest first; the last commit listed for a path is the one that first added it.
  const log = await git(root, ['log', '--first-parent', '--diff-filter=A', '--format=commit %H', '--name-only', '--', MIGRATIONS]);
  const landedAt = new Map<string, string>();
  let commit = '';
  for (const line of log.split('\n')) {
    if (line.startsWith('commit ')) commit = line.slice('commit '.length);
    else if (line !== '') landedAt.set(line, commit);
  }
  if (landedAt.size === 0) throw new Error(`no commit of ${root} adds a file under ${MIGRATIONS}: is this the project's history?`);

  const changes: LandedMigrationChange[] = [];
  for (const [path, added] of [...landedAt].sort(([a], [b]) => (a < b ? -1 : 1))) {
    const expectedAt = GRANDFATHERED[path.slice(MIGRATIONS.length + 1)] ?? added;
    const expected = await gitBytes(root, ['show', `${expectedAt}:${path}`]);
    const actual = await readFile(join(root, path)).catch((error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT') return undefined;
      throw error;
    });
    if (actual === undefined) changes.push({ path, commit: expectedAt, change: 'deleted' });
    else if (!actual.equals(expected)) changes.push({ path, commit: expectedAt, change: 'edited' });
  }
  return changes;
}

function describeChanges(changes: LandedMigrationChange[]): string {
  return changes
    .map(
      (c) =>
        `${c.path} was ${c.change} after it landed (compare: git diff ${c.commit.slice(0, 7)} -- ${c.path}); add a new migration instead`,
    )
    .join('\n');
}

const scratch: string[] = [];
afterAll(async () => {
  await Promise.all(scratch.map((dir) => rm(dir, { recursive: true, force: true })));
});

async function cloneOfThisRepository(extraArgs: string[] = []): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'lc-landed-'));
  scratch.push(dir);
  const clone = join(dir, 'clone');
  // file:// so that --depth is honoured (a plain path clones locally with the whole history).
  await git(repositoryRoot, ['clone', '--quiet', ...extraArgs, `file://${repositoryRoot}`, clone]);
  await git(clone, ['config', 'user.email', 'test@example.invalid']);
  await git(clone, ['config', 'user.name', 'landed-migrations test']);
  return clone;
}

describe('landed migrations', () => {
  it('have the content of the commit that landed them, in this checkout', async () => {
    const changes = await landedMigrationChanges(repositoryRoot);
    expect(changes, describeChanges(changes)).toEqual([]);
  });

  it('grandfather only migrations that were edited after landing, each pinned to a commit that touched it', async () => {
    for (const [file, pinnedAt] of Object.entries(GRANDFATHERED)) {
      const path = `${MIGRATIONS}/${file}`;
      const touching = (await git(repositoryRoot, ['log', '--first-parent', '--format=%H', '--', path])).trim().split('\n');
      const added = (await git(repositoryRoot, ['log', '--first-parent', '--diff-filter=A', '--format=%H', '--', path])).trim();
      expect(touching).toContain(pinnedAt);
      expect(pinnedAt).not.toBe(added);
    }
  });

  describe('in a clone of this repository', () => {
    it('reports a landed migration edited in the working tree, naming the file and the landing commit', async () => {
      const clone = await cloneOfThisRepository();
      const path = `${MIGRATIONS}/0003_business_date_gate/migration.sql`;
      const added = (await git(clone, ['log', '--diff-filter=A', '--format=%H', '--', path])).trim();
      await writeFile(join(clone, path), `${await readFile(join(clone, path), 'utf8')}\n-- an afterthought\n`);

      const changes = await landedMigrationChanges(clone);

      expect(changes).toEqual([{ path, commit: added, change: 'edited' }]);
      expect(describeChanges(changes)).toContain(`${path} was edited after it landed`);
    });

    it('reports an edit that was committed, and one to a grandfathered migration against its pin', async () => {
      const clone = await cloneOfThisRepository();
      const first = `${MIGRATIONS}/0001_nifi_ops_baseline/migration.sql`;
      const grandfathered = `${MIGRATIONS}/0008_report_chunk_fast_path/migration.sql`;
      for (const path of [first, grandfathered]) {
        await writeFile(join(clone, path), `${await readFile(join(clone, path), 'utf8')}\n-- changed\n`);
      }
      await git(clone, ['commit', '--quiet', '-am', 'edit two landed migrations']);

      const changes = await landedMigrationChanges(clone);

      expect(changes.map((c) => [c.path, c.change])).toEqual([
        [first, 'edited'],
        [grandfathered, 'edited'],
      ]);
      expect(changes[1]!.commit).toBe(GRANDFATHERED['0008_report_chunk_fast_path/migration.sql']);
    });

    it('reports a deleted landed migration, and allows a new one not yet committed', async () => {
      const clone = await cloneOfThisRepository();
      const deleted = `${MIGRATIONS}/0006_realtime_notify/migration.sql`;
      await unlink(join(clone, deleted));
      await mkdir(join(clone, MIGRATIONS, '9999_not_yet_committed'));
      await writeFile(join(clone, MIGRATIONS, '9999_not_yet_committed', 'migration.sql'), 'SELECT 1;\n');

      const changes = await landedMigrationChanges(clone);

      expect(changes.map((c) => [c.path, c.change])).toEqual([[deleted, 'deleted']]);
    });

    it('fails, saying why, in a shallow clone', async () => {
      const clone = await cloneOfThisRepository(['--depth', '1']);

      await expect(landedMigrationChanges(clone)).rejects.toThrow(/is a shallow clone: .* needs the whole history/);
    });

    it('fails, saying why, outside a git repository', async () => {
      const dir = await mkdtemp(join(tmpdir(), 'lc-landed-nogit-'));
      scratch.push(dir);

      await expect(landedMigrationChanges(dir)).rejects.toThrow(/git rev-parse --show-toplevel failed in .*not a git repository/);
    });
  });
});
