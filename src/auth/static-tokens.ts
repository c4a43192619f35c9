import { timingSafeEqual } from 'node:crypto';
import { type FSWatcher, readFileSync, unwatchFile, watch, watchFile } from 'node:fs';
import { basename, dirname, resolve } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { type Config, tokenListSchema } from '../config/config.js';
import type { Logger } from '../logging/logger.js';
import type { Principal } from './principal.js';
import { tokenDigest } from './tokens.js';

type TokenList = Config['auth']['tokens'];

/** A file whose change is missed by fs.watch (a network file system, an editor's rename) is noticed within this. */
const POLL_MS = 1000;
/** Changes arrive in bursts (truncate, write, rename): one read after the burst. */
const SETTLE_MS = 50;

export interface StaticTokens {
  /** The principal of a bearer token, or null; compares against every digest so the time taken tells nothing. */
  find(token: string): Principal | null;
  /** Reads auth.tokensFile again; a file that will not do is logged and the tokens in force stay. */
  reload(): boolean;
  /** Stops watching the file. */
  close(): void;
}

/** The entries of a tokens file, with every problem named; throws when the file will not do. */
function readTokensFile(path: string, configured: TokenList): TokenList {
  const document: unknown = parseYaml(readFileSync(path, 'utf8')) ?? [];
  const parsed = tokenListSchema.safeParse(document);
  if (!parsed.success) {
    throw new Error(parsed.error.issues.map((issue) => `${path}: ${issue.path.map(String).join('.')}: ${issue.message}`).join('; '));
  }
  const names = new Set(configured.map((t) => t.name));
  const digests = new Set(configured.map((t) => t.sha256));
  const clash = parsed.data.find((t) => names.has(t.name) || digests.has(t.sha256));
  if (clash) throw new Error(`${path}: token ${JSON.stringify(clash.name)} repeats a name or digest of auth.tokens`);
  return parsed.data;
}

/**
 * The static bearer tokens: auth.tokens, and auth.tokensFile's, which are read again whenever the file changes
 * (fs.watch on its folder, so a file replaced by a rename is seen too, and a poll in case the watch misses it)
 * and on reload() (SIGHUP). Only digests are held. The file must be readable at start.
 */
export function loadStaticTokens(auth: Pick<Config['auth'], 'tokens' | 'tokensFile'>, log: Logger): StaticTokens {
  const configured = auth.tokens;
  const path = auth.tokensFile && resolve(auth.tokensFile);
  const toEntries = (tokens: TokenList) =>
    tokens.map((t) => ({
      digest: Buffer.from(t.sha256, 'hex'),
      principal: { name: t.name, roles: t.roles, method: 'TOKEN', issuer: null, subject: null } satisfies Principal,
    }));
  let entries = toEntries(path ? [...configured, ...readTokensFile(path, configured)] : configured);

  const reload = () => {
    if (!path) return false;
    try {
      const fromFile = readTokensFile(path, configured);
      entries = toEntries([...configured, ...fromFile]);
      log.info({ file: path, tokens: fromFile.length }, 'tokens_file_reloaded');
      return true;
    } catch (error) {
      log.warn({ file: path, err: error }, 'tokens_file_not_reloaded');
      return false;
    }
  };

  let watcher: FSWatcher | null = null;
  let settle: NodeJS.Timeout | undefined;
  const changed = () => {
    clearTimeout(settle);
    settle = setTimeout(reload, SETTLE_MS);
    settle.unref();
  };
  if (path) {
    try {
      watcher = watch(dirname(path), { persistent: false }, (_event, file) => {
        if (file === null || file === basename(path)) changed();
      });
      watcher.on('error', (error) => log.warn({ file: path, err: error }, 'tokens_file_watch_failed'));
    } catch (error) {
      log.warn({ file: path, err: error }, 'tokens_file_watch_failed');
    }
    watchFile(path, { interval: POLL_MS, persistent: false }, (now, before) => {
      if (now.mtimeMs !== before.mtimeMs || now.ino !== before.ino || now.size !== before.size) changed();
    });
  }

  return {
    find(token) {
      const digest = tokenDigest(token);
      let found: Principal | null = null;
      for (const entry of entries) if (timingSafeEqual(entry.digest, digest)) found = entry.principal;
      return found;
    },
    reload,
    close() {
      clearTimeout(settle);
      watcher?.close();
      if (path) unwatchFile(path);
    },
  };
}
