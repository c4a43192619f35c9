// The bytes a browser transfers for the console and GraphiQL on a first visit and on a repeat visit (its cache
// warm: hashed assets are not asked for again, the rest is revalidated), against the built `serve`. Counts
// what crosses the wire (status line, headers and body), with the Accept-Encoding Chromium sends, and the same
// first visit without compression for comparison. Prints numbers; asserts nothing.
// Usage: npm run build && npx tsx bench/pages.ts   (DATABASE_URL names the server, else an embedded one)
import http from 'node:http';
import { benchDatabase, printTable, startCli } from './support.js';

const BROWSER_ENCODINGS = 'gzip, deflate, br, zstd';

interface Fetched {
  status: number;
  headers: http.IncomingHttpHeaders;
  /** Everything that crossed the wire for this answer: status line, headers, body. */
  wireBytes: number;
  body: Buffer;
}

function get(base: string, path: string, headers: Record<string, string>): Promise<Fetched> {
  return new Promise((resolve, reject) => {
    http
      .get(`${base}${path}`, { headers }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => {
          const body = Buffer.concat(chunks);
          const head = `HTTP/1.1 ${res.statusCode} ${res.statusMessage}\r\n${res.rawHeaders
            .map((v, i) => (i % 2 === 0 ? `${v}: ` : `${v}\r\n`))
            .join('')}\r\n`;
          resolve({ status: res.statusCode!, headers: res.headers, wireBytes: Buffer.byteLength(head) + body.length, body });
        });
      })
      .on('error', reject);
  });
}

interface Visit {
  requests: number;
  wireBytes: number;
  /** ETags and cacheability the browser keeps, by path. */
  cache: Map<string, { etag: string | undefined; immutable: boolean }>;
}

/** What a browser asks for to show a page: the page, then what it links (scripts, styles, icons). */
async function visit(base: string, page: string, encodings: string | null, cache: Visit['cache'] | null): Promise<Visit> {
  const result: Visit = { requests: 0, wireBytes: 0, cache: new Map() };
  const fetchOne = async (path: string, accept: string) => {
    const cached = cache?.get(path);
    if (cached?.immutable) return null; // served from the browser's cache, no request
    const headers: Record<string, string> = { Accept: accept, ...(encodings ? { 'Accept-Encoding': encodings } : {}) };
    if (cached?.etag) headers['If-None-Match'] = cached.etag;
    const answer = await get(base, path, headers);
    result.requests++;
    result.wireBytes += answer.wireBytes;
    result.cache.set(path, {
      etag: (answer.headers.etag as string | undefined) ?? cached?.etag,
      immutable: String(answer.headers['cache-control'] ?? '').includes('immutable'),
    });
    return answer;
  };
  const html = await fetchOne(page, 'text/html');
  // a 304 leaves the links as the first visit found them
  const text = html && html.status === 200 ? await decoded(html) : '';
  const links = [...text.matchAll(/(?:src|href)="(\/[^"]+)"/g)].map((m) => m[1]!);
  const known = cache ? [...cache.keys()].filter((path) => path !== page) : [];
  for (const path of new Set([...links, ...known])) await fetchOne(path, '*/*');
  return result;
}

async function decoded(answer: Fetched): Promise<string> {
  const { brotliDecompressSync, gunzipSync } = await import('node:zlib');
  const encoding = answer.headers['content-encoding'];
  const body = encoding === 'br' ? brotliDecompressSync(answer.body) : encoding === 'gzip' ? gunzipSync(answer.body) : answer.body;
  return body.toString('utf8');
}

const kb = (bytes: number) => `${(bytes / 1024).toFixed(1)} KiB`;

const database = await benchDatabase();
const api = await startCli('serve', database.url);
try {
  const rows: Array<Record<string, string | number>> = [];
  for (const [name, page] of [
    ['console', '/'],
    ['GraphiQL', '/graphql'],
  ] as const) {
    const plain = await visit(api.url, page, null, null);
    const first = await visit(api.url, page, BROWSER_ENCODINGS, null);
    const repeat = await visit(api.url, page, BROWSER_ENCODINGS, first.cache);
    rows.push({
      page: name,
      'first visit, uncompressed': `${plain.requests} req, ${kb(plain.wireBytes)}`,
      'first visit': `${first.requests} req, ${kb(first.wireBytes)}`,
      'repeat visit': `${repeat.requests} req, ${kb(repeat.wireBytes)}`,
    });
  }
  printTable(`bytes on the wire per visit (Accept-Encoding: ${BROWSER_ENCODINGS}; a repeat visit has the browser's cache)`, rows);
  console.log(JSON.stringify({ bench: 'pages', rows }));
} finally {
  await api.stop();
  await database.close();
}
