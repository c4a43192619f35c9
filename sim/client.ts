// The simulated NiFi cluster's HTTP client: InvokeHTTP behind a load balancer. The flows' calls are rendered from
// the kit's templates (nifi/requests) over the FlowFile's attributes, and their answers read back into attributes
// as the kit's flow reads them. Connection failures and 503s are retried (another API process first), 500s a few
// times; the fault layer loses committed responses and sends requests twice at once. Every answer is counted, so
// the run ends with what the clients saw.
import { gqlPost } from '../bench/support.js';
import { type Document, documentText } from '../schema/documents/graphql.js';
import { evaluateProperties } from '../nifi/expression-language.js';
import { answerAttributes, kitCall, renderBody, splitAnswer, type KitCall } from '../nifi/kit.js';
import { apiFailure } from '../nifi/load-control-flow.js';
import type { Fault } from './options.js';
import type { Dice, Key } from './random.js';

export type Role = 'nifi' | 'operator';

export const SIM_TOKENS: Record<Role, { name: string; token: string }> = {
  nifi: { name: 'sim-nifi-cluster', token: 'sim-nifi-token-0123456789' },
  operator: { name: 'sim-operator', token: 'sim-operator-token-0123456789' },
};

/** A FlowFile's attributes, as a simulated flow carries them from one call to the next. */
export type FlowFile = Record<string, string>;

const REQUEST_TIMEOUT_MS = 20_000;
/** A request that finds no API for this long fails its flow. */
const REQUEST_DEADLINE_MS = 120_000;
const INTERNAL_ERROR_RETRIES = 3;
const P_LOST = 0.04;
const P_DUPLICATE = 0.04;
/** What the kit's InvokeHTTP sends. */
const NIFI_CONTENT_TYPE = 'application/json; charset=UTF-8';

export interface Reply<T> {
  status: number;
  data: T | null;
  code: string | undefined;
  details: Record<string, unknown> | undefined;
  /**
   * What the kit's flow adds to the FlowFile: after a 2xx, the attributes the call's `sets` read from the answer;
   * after any other answer, InvokeHTTP's status and X-Error-Code and the failure PG-90 reads.
   */
  attributes: FlowFile;
  /** A `split` call's 2xx: the attributes of each item of the list. */
  items: FlowFile[];
}

export interface CallOptions<T> {
  role?: Role;
  /** Names the logical request for the fault dice; its retries keep the key. */
  key: Key;
  /** Sees every 2xx payload of the request: the ones the fault layer then loses, and a duplicate's. */
  observe?: (data: T) => void;
  /** Never sent twice at once: startValidation's second caller would get started=false and drop the flow. */
  noDuplicate?: boolean;
}

export interface NifiCallOptions<T> extends Omit<CallOptions<T>, 'role'> {
  /** The FlowFile's content, for a call whose template places it (the manifest's partition plan). */
  content?: string;
}

export interface ServerError {
  operation: string;
  status: number;
  code: string | undefined;
  message: string | undefined;
  requestId: string | undefined;
}

export class ClientStats {
  requests = 0;
  lost = 0;
  duplicated = 0;
  transportErrors = 0;
  unavailable = 0;
  /** 5xx other than 503, and 2xx answers carrying errors: both are bugs. */
  serverErrors: ServerError[] = [];
  byOperation = new Map<string, Map<number, number>>();

  count(operation: string, status: number): void {
    this.requests++;
    const statuses = this.byOperation.get(operation) ?? new Map<number, number>();
    statuses.set(status, (statuses.get(status) ?? 0) + 1);
    this.byOperation.set(operation, statuses);
  }
}

export interface FaultSwitch {
  enabled(fault: Fault): boolean;
}

export type Log = (message: string) => void;

interface Request {
  field: string;
  body: string;
  role: Role;
  /** The kit's call, when the request is one a NiFi flow makes. */
  call?: KitCall;
  /** X-Request-Id: the FlowFile's uuid, as the kit's InvokeHTTP sends it. */
  requestId?: string;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const backoff = (attempt: number) => Math.min(50 * 2 ** Math.min(attempt, 5), 1_000) * (0.5 + Math.random());

/** What the flow reads of an answer: its `sets` after a 2xx, else the failure its `: failed` step records. */
function flowAttributes(
  call: KitCall | undefined,
  status: number,
  text: string,
  errorCode: string | undefined,
): Pick<Reply<unknown>, 'attributes' | 'items'> {
  if (!call) return { attributes: {}, items: [] };
  if (status >= 200 && status < 300) {
    return call.split ? { attributes: {}, items: splitAnswer(call, text) } : { attributes: answerAttributes(call, text), items: [] };
  }
  const invoked: FlowFile = { 'invokehttp.status.code': String(status), 'load.api.header.X-Error-Code': errorCode ?? '' };
  return { attributes: { ...invoked, ...evaluateProperties(apiFailure(call), invoked) }, items: [] };
}

export class SimClient {
  private nextEndpoint = 0;

  constructor(
    private readonly endpoints: () => readonly string[],
    private readonly faults: FaultSwitch,
    private readonly dice: Dice,
    readonly stats: ClientStats,
    private readonly log: Log,
  ) {}

  /** A request the operator, an observer or a test harness makes: a document and its variables. */
  call<T>(field: string, query: Document | string, variables: Record<string, unknown>, options: CallOptions<T>): Promise<Reply<T>> {
    const body = JSON.stringify({ query: documentText(query), variables });
    return this.request({ field, body, role: options.role ?? 'nifi' }, options);
  }

  /** A call of the kit (`PG-20/reportChunk`), rendered from its template over the FlowFile's attributes. */
  nifi<T>(id: string, flowFile: FlowFile, options: NifiCallOptions<T>): Promise<Reply<T>> {
    const call = kitCall(id);
    const body = renderBody(call, flowFile, options.content);
    return this.request({ field: call.field, body, role: 'nifi', call, requestId: flowFile.uuid }, options);
  }

  private async request<T>(request: Request, options: CallOptions<T>): Promise<Reply<T>> {
    const { field } = request;
    if (!options.noDuplicate && this.faults.enabled('duplicate') && this.dice.chance(P_DUPLICATE, 'duplicate', field, ...options.key)) {
      this.stats.duplicated++;
      this.log(`fault duplicate ${field} ${options.key.join('/')}`);
      const [first] = await Promise.all([this.send<T>(request, options.observe), this.send<T>(request, options.observe)]);
      return first;
    }
    const reply = await this.send<T>(request, options.observe);
    if (reply.status === 200 && this.faults.enabled('lost-response') && this.dice.chance(P_LOST, 'lost', field, ...options.key)) {
      this.stats.lost++;
      this.log(`fault lost-response ${field} ${options.key.join('/')}`);
      return this.send<T>(request, options.observe);
    }
    return reply;
  }

  private endpoint(): string {
    const all = this.endpoints();
    return all[this.nextEndpoint++ % all.length]!;
  }

  private async send<T>({ field, body: requestBody, role, call, requestId }: Request, observe?: (data: T) => void): Promise<Reply<T>> {
    const deadline = Date.now() + REQUEST_DEADLINE_MS;
    let internalErrors = 0;
    for (let attempt = 0; ; attempt++) {
      let status: number;
      let text: string;
      let headers: Record<string, string | string[] | undefined>;
      let body: { data?: Record<string, T | null> | null; errors?: Array<{ message?: string; extensions?: Record<string, unknown> }> };
      try {
        ({ status, body, text, headers } = await gqlPost(this.endpoint(), requestBody, {
          token: SIM_TOKENS[role].token,
          timeoutMs: REQUEST_TIMEOUT_MS,
          contentType: call ? NIFI_CONTENT_TYPE : undefined,
          headers: requestId ? { 'x-request-id': requestId } : undefined,
        }));
      } catch (error) {
        this.stats.transportErrors++;
        if (Date.now() > deadline)
          throw new Error(`${field}: no API answered within ${REQUEST_DEADLINE_MS} ms (${(error as Error).message})`);
        await sleep(backoff(attempt));
        continue;
      }
      this.stats.count(field, status);
      const first = body.errors?.[0];
      const errorCode = typeof headers['x-error-code'] === 'string' ? headers['x-error-code'] : undefined;
      const reply: Reply<T> = {
        status,
        data: body.data?.[field] ?? null,
        code: first?.extensions?.code as string | undefined,
        details: first?.extensions?.details as Record<string, unknown> | undefined,
        ...flowAttributes(call, status, text, errorCode),
      };
      if (status === 503) {
        this.stats.unavailable++;
        if (Date.now() > deadline) throw new Error(`${field}: still 503 after ${REQUEST_DEADLINE_MS} ms`);
        await sleep(200 + Math.random() * 300);
        continue;
      }
      if (status >= 500 || (status < 300 && body.errors?.length)) {
        this.stats.serverErrors.push({
          operation: field,
          status,
          code: reply.code,
          message: first?.message,
          requestId: first?.extensions?.requestId as string | undefined,
        });
        this.log(`server error ${status} ${field}: ${first?.message}`);
        if (status >= 500 && ++internalErrors <= INTERNAL_ERROR_RETRIES) {
          await sleep(backoff(attempt));
          continue;
        }
        return reply;
      }
      if (status === 200 && reply.data !== null) observe?.(reply.data);
      return reply;
    }
  }
}
