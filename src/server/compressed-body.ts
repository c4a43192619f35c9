// Static answers (the console's files, GraphiQL's page) compressed once and sent in the encoding the client
// accepts, with an ETag so that a repeat visit costs a 304.
import type http from 'node:http';
import { promisify } from 'node:util';
import zlib from 'node:zlib';

const brotli = promisify(zlib.brotliCompress);
const gzip = promisify(zlib.gzip);

export interface CompressedBody {
  etag: string;
  identity: Buffer;
  /** Null when compressing would not make it smaller. */
  br: Buffer | null;
  gzip: Buffer | null;
}

/** Below this, compressing costs more than it saves (a header's worth of bytes). */
const MIN_COMPRESSIBLE_BYTES = 1024;

/**
 * Compresses on libuv's thread pool, not the event loop: GraphiQL's 9 MB page takes about a second. Brotli at
 * quality 5 gives most of quality 11's gain (1.95 MB against 1.86 MB at 9) in a tenth of the time.
 */
export async function compressBody(identity: Buffer, etag: string): Promise<CompressedBody> {
  if (identity.length < MIN_COMPRESSIBLE_BYTES) return { etag, identity, br: null, gzip: null };
  const [br, gz] = await Promise.all([
    brotli(identity, {
      params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 5, [zlib.constants.BROTLI_PARAM_SIZE_HINT]: identity.length },
    }),
    gzip(identity, { level: 6 }),
  ]);
  return { etag, identity, br: br.length < identity.length ? br : null, gzip: gz.length < identity.length ? gz : null };
}

/** The encodings an Accept-Encoding header allows (q > 0), br preferred over gzip. */
export function acceptedEncoding(header: string | undefined): 'br' | 'gzip' | null {
  const accepted = new Set<string>();
  for (const part of (header ?? '').split(',')) {
    const [name, ...params] = part.trim().toLowerCase().split(';');
    const q = params.map((p) => /^\s*q=([0-9.]+)\s*$/.exec(p)?.[1]).find((v) => v !== undefined);
    if (name && (q === undefined || Number(q) > 0)) accepted.add(name);
  }
  if (accepted.has('br')) return 'br';
  if (accepted.has('gzip') || accepted.has('*')) return 'gzip';
  return null;
}

/** 304 when the client holds this version (`etag`, without loading the body), else the body in the best encoding it accepts. */
export async function sendCompressed(
  req: http.IncomingMessage,
  res: http.ServerResponse,
  headers: Record<string, string>,
  etag: string,
  load: () => Promise<CompressedBody>,
): Promise<void> {
  const common = { ...headers, ETag: etag, Vary: 'Accept-Encoding' };
  if (req.headers['if-none-match'] === etag) {
    res.writeHead(304, common);
    res.end();
    return;
  }
  const body = await load();
  const encoding = acceptedEncoding(req.headers['accept-encoding']);
  const encoded = encoding && body[encoding];
  const bytes = encoded ?? body.identity;
  res.writeHead(200, {
    ...common,
    ...(encoded ? { 'Content-Encoding': encoding } : {}),
    'Content-Length': String(bytes.length),
  });
  res.end(req.method === 'HEAD' ? undefined : bytes);
}
