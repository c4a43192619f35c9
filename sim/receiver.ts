// PG-05, NiFi's control receiver: a real HTTP server on loopback taking the worker's POST /validate/{jobKey},
// /reissue/{jobKey} and a backfill's /start/{jobKey}. 2xx means "received"; each accepted call starts a flow
// (PG-40, PG-20 for the partition, or PG-10 for the backfill's date), whose first request is the ACK. Faults: 5xx (now and then a 404, which kills the call until an
// operator resends it), answers after the worker gave up (sometimes after the flow was started anyway),
// calls accepted and then lost, and duplicated FlowFiles.
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import { evaluateProperty, jsonPathValue } from '../nifi/expression-language.js';
import { RECEIVER_ALLOWED_PATHS, RECEIVER_CALL_ATTRIBUTES, RECEIVER_ROUTES } from '../nifi/load-control-flow.js';
import type { FaultSwitch, FlowFile, Log } from './client.js';
import { RECEIVER_TIMEOUT_MS } from './cluster.js';
import { SIM_JOBS } from './coordinator.js';
import type { Dice, Key } from './random.js';

interface ValidateCall {
  runId: string;
  dispatchId: string;
  jobKey: string;
}

interface ReissueCall {
  runId: string;
  dispatchId: string;
  jobKey: string;
  partitionId: string;
  expectedRowCount: string;
  hdfsRunPath: string;
}

interface StartCall {
  dispatchId: string;
  backfillId: string;
  businessKey: string;
  jobKey: string;
}

type CallKind = keyof typeof RECEIVER_CALL_ATTRIBUTES;

const ALLOWED_PATHS = new RegExp(`^(?:${RECEIVER_ALLOWED_PATHS})$`);

/**
 * Which PG-05 takes a call, as the flow itself routes it: HandleHttpRequest's Allowed Paths, then the "which call"
 * RouteOnAttribute's expressions evaluated over http.request.uri in the flow of each job (its LOAD.JOB.KEY). Null:
 * no flow's route matched (NiFi answers 404).
 */
function routeCall(uri: string, jobKeys: readonly string[]): { kind: CallKind; jobKey: string } | null {
  if (!ALLOWED_PATHS.test(uri)) return null;
  for (const jobKey of jobKeys) {
    const scope = { attributes: { 'http.request.uri': uri }, parameters: { 'LOAD.JOB.KEY': jobKey } };
    for (const kind of ['validate', 'reissue', 'start'] as const) {
      if (evaluateProperty(RECEIVER_ROUTES[kind], scope, { expressionLanguage: true }) === 'true') return { kind, jobKey };
    }
  }
  return null;
}

/** The FlowFile PG-05 makes of a call: what the kit's flow reads of its body (EvaluateJsonPath). */
export function receivedFlowFile(kind: CallKind, body: object): FlowFile {
  const text = JSON.stringify(body);
  const read = Object.entries(RECEIVER_CALL_ATTRIBUTES[kind]).map(([name, path]) => [name, jsonPathValue(text, path)]);
  return { uuid: randomUUID(), ...Object.fromEntries(read) };
}

export interface ReceiverHandlers {
  validate(call: ValidateCall, copy: number): void;
  reissue(call: ReissueCall, copy: number): void;
  start(call: StartCall, copy: number): void;
}

export class ReceiverStats {
  calls = 0;
  validateCalls = 0;
  reissueCalls = 0;
  startCalls = 0;
  answered5xx = 0;
  answered4xx = 0;
  answeredLate = 0;
  lostFlows = 0;
  duplicatedFlows = 0;
  /** Calls whose headers and body disagree, miss fields or name an unknown run: the worker's request is wrong. */
  malformed: string[] = [];
}

const P_5XX = 0.15;
const P_4XX = 0.03;
const P_LATE = 0.1;
const P_LOST = 0.05;
const P_DUPLICATE_FLOW = 0.1;

export interface Receiver {
  url: string;
  stats: ReceiverStats;
  close(): Promise<void>;
}

/**
 * Names what a call is about in the simulated world (run and partition by their place in it, not by their
 * random ids), so that the seed decides the same faults for the same calls. A start call has no run: it is about
 * its business key.
 */
export type CallSubject = (kind: CallKind, runIdOrBusinessKey: string, partitionId: string | undefined) => Key;

/** A call as the worker must send it: X-Dispatch-Id as in the body; X-Run-Id too, but for a start (no run yet). */
function wellFormed(kind: CallKind, headers: http.IncomingHttpHeaders, body: Record<string, unknown>): boolean {
  const dispatchId = headers['x-dispatch-id'];
  if (typeof dispatchId !== 'string' || body.dispatchId !== dispatchId) return false;
  if (kind === 'start') return typeof body.backfillId === 'string' && typeof body.businessKey === 'string';
  const runId = headers['x-run-id'];
  return typeof runId === 'string' && body.runId === runId;
}

export async function startReceiver(
  handlers: ReceiverHandlers,
  faults: FaultSwitch,
  dice: Dice,
  log: Log,
  subject: CallSubject,
): Promise<Receiver> {
  const stats = new ReceiverStats();
  const arrivals = new Map<string, number>();

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      stats.calls++;
      const route = routeCall(new URL(req.url ?? '/', 'http://receiver').pathname, SIM_JOBS);
      let body: Record<string, unknown> = {};
      try {
        body = JSON.parse(Buffer.concat(chunks).toString() || '{}');
      } catch {
        stats.malformed.push(`unparsable body on ${req.url}`);
      }
      const dispatchId = String(req.headers['x-dispatch-id']);
      if (req.method !== 'POST' || !route || !wellFormed(route.kind, req.headers, body)) {
        stats.malformed.push(`${req.method} ${req.url} x-run-id=${req.headers['x-run-id']} x-dispatch-id=${dispatchId}`);
        res.writeHead(400).end('malformed call');
        return;
      }
      const { kind, jobKey } = route;
      const runId = String(kind === 'start' ? body.businessKey : req.headers['x-run-id']);
      const about = subject(kind, runId, typeof body.partitionId === 'string' ? body.partitionId : undefined);
      const arrival = (arrivals.get(about.join('|')) ?? 0) + 1;
      arrivals.set(about.join('|'), arrival);
      const key = [...about, arrival];
      if (kind === 'validate') stats.validateCalls++;
      else if (kind === 'reissue') stats.reissueCalls++;
      else stats.startCalls++;

      const start = () => {
        const copies = faults.enabled('duplicate') && dice.chance(P_DUPLICATE_FLOW, 'receiver-duplicate', ...key) ? 2 : 1;
        if (copies === 2) {
          stats.duplicatedFlows++;
          log(`fault duplicate flow for ${kind} ${dispatchId}`);
        }
        for (let copy = 0; copy < copies; copy++) {
          if (kind === 'validate') handlers.validate({ runId, dispatchId, jobKey }, copy);
          else if (kind === 'reissue') handlers.reissue({ ...(body as unknown as ReissueCall), jobKey }, copy);
          else handlers.start({ ...(body as unknown as StartCall), jobKey }, copy);
        }
      };

      if (faults.enabled('receiver-5xx') && dice.chance(P_4XX, 'receiver-4xx', ...key)) {
        stats.answered4xx++;
        log(`fault receiver-4xx ${kind} ${dispatchId} #${arrival}: the call is DEAD until an operator resends it`);
        res.writeHead(404).end('no route for this job (flow being redeployed)');
        return;
      }
      if (faults.enabled('receiver-5xx') && dice.chance(P_5XX, 'receiver-5xx', ...key)) {
        stats.answered5xx++;
        log(`fault receiver-5xx ${kind} ${dispatchId} #${arrival}`);
        res.writeHead(dice.pick([500, 502, 503], 'receiver-5xx-status', ...key)).end('simulated outage');
        return;
      }
      if (faults.enabled('receiver-timeout') && dice.chance(P_LATE, 'receiver-late', ...key)) {
        stats.answeredLate++;
        // NiFi took the FlowFile but answered too late: the worker retries, and the flow may run twice
        const startedAnyway = dice.chance(0.5, 'receiver-late-started', ...key);
        log(`fault receiver-timeout ${kind} ${dispatchId} #${arrival} (flow ${startedAnyway ? 'started' : 'not started'})`);
        if (startedAnyway) start();
        setTimeout(() => {
          if (!res.destroyed) res.writeHead(202).end();
        }, RECEIVER_TIMEOUT_MS);
        return;
      }
      res.writeHead(202).end();
      if (faults.enabled('receiver-timeout') && dice.chance(P_LOST, 'receiver-lost', ...key)) {
        stats.lostFlows++;
        log(`fault receiver lost the FlowFile of ${kind} ${dispatchId} #${arrival}`);
        return;
      }
      start();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}/control/`,
    stats,
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
