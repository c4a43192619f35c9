import { readFile, stat } from 'node:fs/promises';
import type http from 'node:http';
import { extname, join, normalize, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type CompressedBody, compressBody, sendCompressed } from './compressed-body.js';

/** Where `vite build --config web/vite.config.ts` writes the console (from src/server and dist/server alike). */
const defaultConsoleDir = fileURLToPath(new URL('../../web/dist', import.meta.url));

const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.woff2': 'font/woff2',
  '.txt': 'text/plain; charset=utf-8',
};

/** Text, which compresses; images and fonts are compressed already. */
const COMPRESSIBLE = new Set(['.html', '.js', '.css', '.json', '.map', '.svg', '.txt']);

// Everything the console needs is bundled and served from here: no inline scripts, no other origins.
const SECURITY_HEADERS = {
  'Content-Security-Policy':
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
    "font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
  'X-Frame-Options': 'DENY',
};

/**
 * Serves the built console, compressed (br or gzip, as the browser accepts): hashed files under /assets/ are
 * cached for good, everything else is revalidated (a repeat visit costs a 304); a GET for a path without a file extension from a browser (Accept: text/html) gets
 * index.html, so the console's own routes (/runs/…, /readiness) survive a reload.
 * Returns false when the request is not the console's, for the caller's 404.
 */
export function createConsoleHandler(dir: string = defaultConsoleDir) {
  const root = normalize(dir + sep);

  async function fileOf(path: string): Promise<{ file: string; size: number; mtime: Date } | null> {
    const file = normalize(join(root, path));
    if (!file.startsWith(root)) return null;
    const info = await stat(file).catch(() => null);
    return info?.isFile() ? { file, size: info.size, mtime: info.mtime } : null;
  }

  /** A file's bytes and their compressed forms, kept per version (etag): the console is a handful of files. */
  const bodies = new Map<string, { etag: string; body: Promise<CompressedBody> }>();
  function bodyOf(file: string, etag: string): Promise<CompressedBody> {
    const known = bodies.get(file);
    if (known?.etag === etag) return known.body;
    const body = readFile(file).then((bytes) =>
      COMPRESSIBLE.has(extname(file)) ? compressBody(bytes, etag) : { etag, identity: bytes, br: null, gzip: null },
    );
    bodies.set(file, { etag, body });
    body.catch(() => bodies.delete(file));
    return body;
  }

  return async function serveConsole(req: http.IncomingMessage, res: http.ServerResponse, path: string): Promise<boolean> {
    if (req.method !== 'GET' && req.method !== 'HEAD') return false;
    let decoded: string;
    try {
      decoded = decodeURIComponent(path);
    } catch {
      return false;
    }
    if (decoded.includes('\0')) return false;
    const wantsPage = extname(decoded) === '' && (req.headers.accept ?? '').includes('text/html');
    const found = decoded === '/' || wantsPage ? await fileOf('index.html') : await fileOf(decoded.slice(1));
    if (!found) {
      if (!wantsPage && decoded !== '/') return false;
      res.writeHead(404, { 'Content-Type': 'text/plain; charset=utf-8', ...SECURITY_HEADERS });
      res.end('The console is not built: run `npm run build:web` (vite build --config web/vite.config.ts).\n');
      return true;
    }
    const etag = `"${found.size.toString(16)}-${found.mtime.getTime().toString(16)}"`;
    const immutable = decoded.startsWith('/assets/');
    const headers = {
      'Content-Type': CONTENT_TYPES[extname(found.file)] ?? 'application/octet-stream',
      'Cache-Control': immutable ? 'public, max-age=31536000, immutable' : 'no-cache',
      ...SECURITY_HEADERS,
    };
    // a file replaced between stat and read (a deploy): the caller's 404, and the next request reads it again
    return sendCompressed(req, res, headers, etag, () => bodyOf(found.file, etag)).then(
      () => true,
      () => false,
    );
  };
}
