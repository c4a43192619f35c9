// The console's files served by the API: content types, caching, the SPA fallback, and nothing else.
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import zlib from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, type TestApi } from '../../support/api.js';

let base: string;
let dir: string;
let api: TestApi;
let unbuilt: TestApi;
const INDEX = '<!doctype html><title>Load Control</title><script type="module" src="/assets/index-abc123.js"></script>';
const LARGE = Array.from({ length: 2000 }, (_, i) => `export const item${i} = { id: ${i}, label: 'item ${i}' };`).join('\n');

beforeAll(async () => {
  base = await mkdtemp(join(tmpdir(), 'lc-console-'));
  dir = join(base, 'dist');
  await mkdir(join(dir, 'assets'), { recursive: true });
  await writeFile(join(base, 'lc-console-secret.txt'), 'secret');
  await writeFile(join(dir, 'index.html'), INDEX);
  await writeFile(join(dir, 'assets', 'index-abc123.js'), 'console.log("hi")');
  await writeFile(join(dir, 'assets', 'index-abc123.css'), 'body{}');
  await writeFile(join(dir, 'favicon.svg'), '<svg xmlns="http://www.w3.org/2000/svg"/>');
  await writeFile(join(dir, 'assets', 'large-abc123.js'), LARGE);
  await writeFile(join(dir, 'assets', 'logo-abc123.png'), Buffer.alloc(4096, 7));
  api = await startTestApi({}, { consoleDir: dir });
  unbuilt = await startTestApi({}, { consoleDir: join(dir, 'missing') });
});
afterAll(async () => {
  await api?.close();
  await unbuilt?.close();
  await rm(base, { recursive: true, force: true });
});

const get = (path: string, headers: Record<string, string> = {}, base = api.url) => fetch(`${base}${path}`, { headers });

/** A GET as sent and answered on the wire: fetch would ask for and undo compression itself. */
function rawGet(
  path: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const { port } = new URL(api.url);
    http
      .get({ host: '127.0.0.1', port, path, headers }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }));
      })
      .on('error', reject);
  });
}
const page = { Accept: 'text/html,application/xhtml+xml' };

describe('the console', () => {
  it('serves index.html at / with no-cache and a strict content security policy', async () => {
    const res = await get('/', page);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(res.headers.get('cache-control')).toBe('no-cache');
    expect(res.headers.get('content-security-policy')).toContain("default-src 'self'");
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    expect(await res.text()).toBe(INDEX);
  });

  it('serves hashed assets with their content type, cached for good', async () => {
    const js = await get('/assets/index-abc123.js');
    expect(js.status).toBe(200);
    expect(js.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect(js.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    expect(await js.text()).toBe('console.log("hi")');
    expect((await get('/assets/index-abc123.css')).headers.get('content-type')).toBe('text/css; charset=utf-8');
    const svg = await get('/favicon.svg');
    expect(svg.headers.get('content-type')).toBe('image/svg+xml');
    expect(svg.headers.get('cache-control')).toBe('no-cache');
  });

  it('answers a matching ETag with 304 and HEAD without a body', async () => {
    const first = await get('/assets/index-abc123.js');
    const etag = first.headers.get('etag')!;
    expect(etag).toBeTruthy();
    const again = await get('/assets/index-abc123.js', { 'If-None-Match': etag });
    expect(again.status).toBe(304);
    const head = await fetch(`${api.url}/`, { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(head.headers.get('content-length')).toBe(String(INDEX.length));
    expect(await head.text()).toBe('');
  });

  it('sends text compressed in the encoding the browser accepts (br before gzip), and images and small files as they are', async () => {
    const br = await rawGet('/assets/large-abc123.js', { 'Accept-Encoding': 'gzip, deflate, br' });
    expect([br.status, br.headers['content-encoding'], br.headers.vary]).toEqual([200, 'br', 'Accept-Encoding']);
    expect(Number(br.headers['content-length'])).toBe(br.body.length);
    expect(br.body.length).toBeLessThan(LARGE.length / 5);
    expect(zlib.brotliDecompressSync(br.body).toString()).toBe(LARGE);

    const gzip = await rawGet('/assets/large-abc123.js', { 'Accept-Encoding': 'gzip;q=1, br;q=0' });
    expect(gzip.headers['content-encoding']).toBe('gzip');
    expect(zlib.gunzipSync(gzip.body).toString()).toBe(LARGE);

    const identity = await rawGet('/assets/large-abc123.js');
    expect([identity.headers['content-encoding'], identity.body.toString()]).toEqual([undefined, LARGE]);
    // one version, one ETag, whatever the encoding
    expect(new Set([br.headers.etag, gzip.headers.etag, identity.headers.etag]).size).toBe(1);
    const repeat = await rawGet('/assets/large-abc123.js', { 'Accept-Encoding': 'br', 'If-None-Match': br.headers.etag! });
    expect([repeat.status, repeat.body.length]).toEqual([304, 0]);

    const png = await rawGet('/assets/logo-abc123.png', { 'Accept-Encoding': 'br' });
    expect([png.headers['content-encoding'], png.body.length]).toEqual([undefined, 4096]);
    const small = await rawGet('/assets/index-abc123.js', { 'Accept-Encoding': 'br' });
    expect([small.headers['content-encoding'], small.body.toString()]).toEqual([undefined, 'console.log("hi")']);
  });

  it("gives the console's own routes index.html when a browser asks, and 404 NOT_FOUND otherwise", async () => {
    const route = await get(`/runs/${'0'.repeat(8)}-0000-0000-0000-000000000000`, page);
    expect(route.status).toBe(200);
    expect(await route.text()).toBe(INDEX);
    expect((await get('/readiness', page)).status).toBe(200);
    const api404 = await get('/runs/abc', { Accept: 'application/json' });
    expect(api404.status).toBe(404);
    expect(await api404.json()).toMatchObject({ code: 'NOT_FOUND' });
    expect((await get('/assets/missing-1.js', page)).status).toBe(404);
    expect((await fetch(`${api.url}/`, { method: 'POST', headers: page })).status).toBe(404);
  });

  it('never serves a file outside its directory', async () => {
    // sent as written: fetch would normalise the dot segments away before they reach the server
    const raw = (path: string) =>
      new Promise<{ status: number; body: string }>((resolve, reject) => {
        const { port } = new URL(api.url);
        http
          .get({ host: '127.0.0.1', port, path }, (res) => {
            let body = '';
            res.on('data', (chunk) => (body += chunk));
            res.on('end', () => resolve({ status: res.statusCode!, body }));
          })
          .on('error', reject);
      });
    for (const path of [
      '/../package.json',
      '/assets/../../lc-console-secret.txt',
      '/%2e%2e/lc-console-secret.txt',
      '/assets/..%2f..%2flc-console-secret.txt',
      '/%2e%2e%2f%2e%2e%2fetc%2fpasswd',
      '/a%00b',
      '/%E0%A4%A',
    ]) {
      const res = await raw(path);
      expect(res.status, path).toBe(404);
      expect(res.body).not.toContain('secret');
    }
  });

  it('says how to build the console when it has not been built', async () => {
    const res = await get('/', page, unbuilt.url);
    expect(res.status).toBe(404);
    expect(await res.text()).toContain('npm run build:web');
    expect((await get('/healthz', {}, unbuilt.url)).status).toBe(200);
  });
});
