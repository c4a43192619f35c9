// The simulated NiFi cluster's HTTP client: InvokeHTTP behind a load balancer. Connection failures and 503s
// are retried (another API process first), 500s a few times; the fault layer loses committed responses and
// sends requests twice at once. Every answer is counted, so the run ends with what the clients saw.
import { gqlRequest } from '../bench/support.js';
import type { Fault } from './options.js';
import type { Dice, Key } from './random.js';

export type Role = 'nifi' | 'operator';

export const SIM_TOKENS: Record<Role, { name: string; token: string }> = {
  nifi: { name: 'sim-nifi-cluster', token: 'sim-nifi-token-0123456789' },
  operator: { name: 'sim-operator', token: 'sim-operator-token-0123456789' },
};

const REQUEST_TIMEOUT_MS = 20_000;
/** A request that finds no API for this long fails its flow. */
const REQUEST_DEADLINE_MS = 120_000;
const INTERNAL_ERROR_RETRIES = 3;
const P_LOST = 0.04;
const P_DUPLICATE = 0.04;

export interface Reply<T> {
  status: number;
  data: T | null;
  code: string | undefined;
  details: Record<string, unknown> | undefined;
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

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const backoff = (attempt: number) => Math.min(50 * 2 ** Math.min(attempt, 5), 1_000) * (0.5 + Math.random());

export class SimClient {
  private nextEndpoint = 0;

  constructor(
    private readonly endpoints: () => readonly string[],
    private readonly faults: FaultSwitch,
    private readonly dice: Dice,
    readonly stats: ClientStats,
    private readonly log: Log,
  ) {}

  /** One mutation with its `input`, or a query (`variables` given as they are when input is undefined). */
  async call<T>(field: string, query: string, variables: Record<string, unknown>, options: CallOptions<T>): Promise<Reply<T>> {
    const role = options.role ?? 'nifi';
    if (!options.noDuplicate && this.faults.enabled('duplicate') && this.dice.chance(P_DUPLICATE, 'duplicate', field, ...options.key)) {
      this.stats.duplicated++;
      this.log(`fault duplicate ${field} ${options.key.join('/')}`);
      const [first] = await Promise.all([
        this.send<T>(field, query, variables, role, options.observe),
        this.send<T>(field, query, variables, role, options.observe),
      ]);
      return first;
    }
    const reply = await this.send<T>(field, query, variables, role, options.observe);
    if (reply.status === 200 && this.faults.enabled('lost-response') && this.dice.chance(P_LOST, 'lost', field, ...options.key)) {
      this.stats.lost++;
      this.log(`fault lost-response ${field} ${options.key.join('/')}`);
      return this.send<T>(field, query, variables, role, options.observe);
    }
    return reply;
  }

  private endpoint(): string {
    const all = this.endpoints();
    return all[this.nextEndpoint++ % all.length]!;
  }

  private async send<T>(
    field: string,
    query: string,
    variables: Record<string, unknown>,
    role: Role,
    observe?: (data: T) => void,
  ): Promise<Reply<T>> {
    const deadline = Date.now() + REQUEST_DEADLINE_MS;
    let internalErrors = 0;
    for (let attempt = 0; ; attempt++) {
      let status: number;
      let body: { data?: Record<string, T | null> | null; errors?: Array<{ message?: string; extensions?: Record<string, unknown> }> };
      try {
        ({ status, body } = (await gqlRequest(this.endpoint(), query, variables, {
          token: SIM_TOKENS[role].token,
          timeoutMs: REQUEST_TIMEOUT_MS,
        })) as { status: number; body: typeof body });
      } catch (error) {
        this.stats.transportErrors++;
        if (Date.now() > deadline)
          throw new Error(`${field}: no API answered within ${REQUEST_DEADLINE_MS} ms (${(error as Error).message})`);
        await sleep(backoff(attempt));
        continue;
      }
      this.stats.count(field, status);
      const first = body.errors?.[0];
      const reply: Reply<T> = {
        status,
        data: body.data?.[field] ?? null,
        code: first?.extensions?.code as string | undefined,
        details: first?.extensions?.details as Record<string, unknown> | undefined,
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
