// GraphiQL's page (offline: its 9 MB bundle is inline), rendered and compressed once per process and sent
// as br or gzip (1.9 / 2.4 MB) with an ETag, so that a repeat visit costs a 304 instead of 9 MB.
import { createHash } from 'node:crypto';
import type http from 'node:http';
import { renderGraphiQL } from '@graphql-yoga/render-graphiql';
import { type CompressedBody, compressBody, sendCompressed } from './compressed-body.js';

const OPTIONS = {
  title: 'Load Control',
  endpoint: '/graphql',
  defaultQuery: '{ runs(first: 10) { nodes { runId jobKey businessKey status } } }',
};

let page: Promise<CompressedBody> | undefined;

/** Rendered on the first visit, not at start: most processes never serve it. */
function graphiqlPage(): Promise<CompressedBody> {
  page ??= (async () => {
    const html = Buffer.from(renderGraphiQL(OPTIONS));
    return compressBody(html, `"${createHash('sha256').update(html).digest('base64url').slice(0, 27)}"`);
  })();
  return page;
}

/** A browser's GET of /graphql (Accept: text/html): the page holds no data and needs no token. */
export function asksForGraphiQL(req: http.IncomingMessage): boolean {
  return (req.method === 'GET' || req.method === 'HEAD') && (req.headers.accept ?? '').includes('text/html');
}

export async function serveGraphiQL(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
  const { etag } = await graphiqlPage();
  await sendCompressed(req, res, { 'Content-Type': 'text/html; charset=utf-8', 'Cache-Control': 'no-cache' }, etag, graphiqlPage);
}
