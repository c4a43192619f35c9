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
  // the Headers tab open: every request needs a token, and GraphiQL hid where it goes
  defaultEditorToolsVisibility: 'headers' as const,
  // a token typed there stays in the tab, never in localStorage
  shouldPersistHeaders: false,
};

/** The header template when the console has no sign-in in this browser. */
const HEADER_TEMPLATE = { Authorization: 'Bearer <a token: load-control token NAME ROLES, or .data/dev-tokens.json under npm start>' };

/**
 * GraphiQL's headers are chosen in the page, before it renders: the console's token when this browser is signed in
 * with one (the console keeps it under lc.token, in the tab or remembered), else the X-CSRF-Token of a provider
 * sign-in (the session cookie goes with GraphiQL's same-origin requests), else the template.
 */
const CHOOSE_HEADERS = `(async (options) => {
  const token = sessionStorage.getItem('lc.token') || localStorage.getItem('lc.token');
  let headers = ${JSON.stringify(HEADER_TEMPLATE)};
  if (token) headers = { Authorization: 'Bearer ' + token };
  else {
    try {
      const answer = await (await fetch('/auth/session', { headers: { Accept: 'application/json' } })).json();
      if (answer.session) headers = { 'X-CSRF-Token': answer.session.csrfToken };
    } catch {}
  }
  YogaGraphiQL.renderYogaGraphiQL(window.document.querySelector('#root'), { ...options, headers: JSON.stringify(headers, null, 2) });
})`;

/** renderGraphiQL's page with its render call made by CHOOSE_HEADERS (it must be there: a newer renderGraphiQL fails here). */
function graphiqlHtml(): string {
  const html = renderGraphiQL(OPTIONS);
  const call = /YogaGraphiQL\.renderYogaGraphiQL\(\s*window\.document\.querySelector\('#root'\),\s*(\{.*?\}),\s*\);/s.exec(html);
  if (!call) throw new Error('renderGraphiQL no longer ends with renderYogaGraphiQL(root, options): GraphiQL would have no headers');
  return html.replace(call[0], () => `${CHOOSE_HEADERS}(${call[1]});`);
}

let page: Promise<CompressedBody> | undefined;

/** Rendered on the first visit, not at start: most processes never serve it. */
function graphiqlPage(): Promise<CompressedBody> {
  page ??= (async () => {
    const html = Buffer.from(graphiqlHtml());
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
