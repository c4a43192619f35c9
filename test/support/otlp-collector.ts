// A stand-in for an OpenTelemetry collector: a loopback HTTP server taking OTLP/HTTP trace exports in their JSON
// encoding (what @opentelemetry/exporter-trace-otlp-http sends) and keeping every span, flattened.
import http from 'node:http';

type AttributeValue = string | number | boolean;

interface OtlpAnyValue {
  stringValue?: string;
  intValue?: string | number;
  doubleValue?: number;
  boolValue?: boolean;
}

interface OtlpKeyValue {
  key: string;
  value: OtlpAnyValue;
}

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes?: OtlpKeyValue[];
  status?: { code?: number; message?: string };
  links?: Array<{ traceId: string; spanId: string }>;
}

interface OtlpExport {
  resourceSpans: Array<{ resource?: { attributes?: OtlpKeyValue[] }; scopeSpans: Array<{ spans?: OtlpSpan[] }> }>;
}

/** OTLP's span kinds. */
export const SPAN_KIND = { INTERNAL: 1, SERVER: 2, CLIENT: 3 } as const;
/** OTLP's status codes. */
export const STATUS = { UNSET: 0, OK: 1, ERROR: 2 } as const;

export interface CollectedSpan {
  traceId: string;
  spanId: string;
  /** Empty for a trace's root. */
  parentSpanId: string;
  name: string;
  kind: number;
  attributes: Record<string, AttributeValue>;
  status: { code: number; message: string };
  links: Array<{ traceId: string; spanId: string }>;
  /** The exporting process's (or execution thread's) resource attributes. */
  resource: Record<string, AttributeValue>;
}

export interface Collector {
  /** The OTLP/HTTP traces URL to configure as tracing.endpoint. */
  url: string;
  spans: CollectedSpan[];
  /** The headers of every export received. */
  exports: http.IncomingHttpHeaders[];
  close(): Promise<void>;
}

function plain(value: OtlpAnyValue): AttributeValue {
  if (value.stringValue !== undefined) return value.stringValue;
  if (value.intValue !== undefined) return Number(value.intValue);
  if (value.doubleValue !== undefined) return value.doubleValue;
  if (value.boolValue !== undefined) return value.boolValue;
  throw new Error(`collector: an attribute value of a kind the test does not expect: ${JSON.stringify(value)}`);
}

const attributesOf = (list: OtlpKeyValue[] = []) => Object.fromEntries(list.map(({ key, value }) => [key, plain(value)]));

export async function startCollector(): Promise<Collector> {
  const spans: CollectedSpan[] = [];
  const exports: http.IncomingHttpHeaders[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      if (req.method !== 'POST' || req.url !== '/v1/traces' || !req.headers['content-type']?.startsWith('application/json')) {
        res.writeHead(400).end();
        return;
      }
      exports.push(req.headers);
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as OtlpExport;
      for (const { resource, scopeSpans } of body.resourceSpans) {
        for (const scope of scopeSpans) {
          for (const span of scope.spans ?? []) {
            spans.push({
              traceId: span.traceId,
              spanId: span.spanId,
              parentSpanId: span.parentSpanId ?? '',
              name: span.name,
              kind: span.kind,
              attributes: attributesOf(span.attributes),
              status: { code: span.status?.code ?? STATUS.UNSET, message: span.status?.message ?? '' },
              links: (span.links ?? []).map(({ traceId, spanId }) => ({ traceId, spanId })),
              resource: attributesOf(resource?.attributes),
            });
          }
        }
      }
      res.writeHead(200, { 'Content-Type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}/v1/traces`,
    spans,
    exports,
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
