// Fixtures of the business-date gate, built through its GraphQL operations.
import { randomUUID } from 'node:crypto';
import { expect } from 'vitest';
import type { TestApi, TokenName } from './api.js';
import { documentText } from '../../schema/documents/graphql.js';
import * as operator from '../../schema/documents/operator.js';
import { MARK_SUCCESS, metric, recordMetrics } from './fixtures.js';

export const RECORD_OBSERVATION = `mutation($input: RecordObservationInput!) {
  recordObservation(input: $input) {
    changed
    observation { jobId businessDate attempt runId state startedAt firstObservedAt observedAt observedBy } } }`;
export const DEFINE_GATE = documentText(operator.DEFINE_GATE);
export const READINESS = `query($consumer: String!, $businessDate: Date!) {
  readiness(consumer: $consumer, businessDate: $businessDate) {
    consumer businessDate gateDefined ready
    jobs { jobId ready reason attempt state runId latest { source startedAt } deadline deadlineOutcome }
    decision { version ready evidence { jobId attempt runId } cause decidedAt } } }`;
export const READINESS_DECISIONS = `query($consumer: String!, $businessDate: Date!, $last: Int) {
  readinessDecisions(consumer: $consumer, businessDate: $businessDate, last: $last) {
    consumer businessDate version ready evidence { jobId attempt runId } cause decidedAt } }`;
export const PUBLISH = `mutation($input: PublishInput!) {
  publish(input: $input) {
    published
    publication { consumer businessDate output outputHash publishedBy publishedAt evidence { jobId attempt runId } } } }`;
export const PUBLICATION = `query($consumer: String!, $businessDate: Date!) {
  publication(consumer: $consumer, businessDate: $businessDate) {
    consumer businessDate output outputHash publishedBy evidence { jobId attempt runId } } }`;
export const OBSERVATIONS = `query($jobId: String!, $businessDate: Date!) {
  observations(jobId: $jobId, businessDate: $businessDate) { jobId attempt runId state source startedAt } }`;

/** A name no other test uses: job ids and consumers are global in a test database. */
export const unique = (prefix: string): string => `${prefix}_${randomUUID().slice(0, 8)}`;

export interface ObservationInput {
  jobId: string;
  businessDate: string;
  attempt?: number | string;
  runId?: string;
  state: 'RUNNING' | 'SUCCEEDED' | 'FAILED';
  startedAt?: string;
}

export function observe(api: TestApi, input: ObservationInput, token: TokenName | null = 'nifi') {
  return api.gql(
    RECORD_OBSERVATION,
    {
      input: {
        attempt: 1,
        runId: `run-${input.jobId}-${input.businessDate}-${input.attempt ?? 1}`,
        startedAt: `${input.businessDate}T06:00:00+00:00`,
        ...input,
      },
    },
    { token },
  );
}

/** Records an observation and expects it to be accepted. */
export async function observed(api: TestApi, input: ObservationInput) {
  const res = await observe(api, input);
  expect(res.body.errors).toBeUndefined();
  return res.body.data!.recordObservation as { changed: boolean; observation: Record<string, unknown> };
}

export interface ExpectedByInput {
  jobId: string;
  daysAfter: number;
  time: string;
  timeZone: string;
}

export interface DecisionOut {
  businessDate?: string;
  version: number;
  ready: boolean;
  evidence: Array<{ jobId: string; attempt: number; runId: string }>;
  cause: Record<string, unknown>;
}

export async function defineGate(
  api: TestApi,
  consumer: string,
  requiredJobs: string[],
  boundJobKey?: string,
  more: { notifyUrl?: string | null; notifyFormat?: string; notifyAsset?: string; expectedBy?: ExpectedByInput[] } = {},
) {
  const res = await api.gql(
    DEFINE_GATE,
    { input: { consumer, requiredJobs, ...(boundJobKey ? { boundJobKey } : {}), ...more } },
    { token: 'operator' },
  );
  expect(res.body.errors).toBeUndefined();
  return res.body.data!.defineGate as { changed: boolean; gate: Record<string, any>; decisions: DecisionOut[] };
}

/** The recorded readiness decisions of a consumer for a date, oldest first. */
export async function decisionsOf(api: TestApi, consumer: string, businessDate: string): Promise<DecisionOut[]> {
  const res = await api.gql(READINESS_DECISIONS, { consumer, businessDate, last: 100 }, { token: 'viewer' });
  expect(res.body.errors).toBeUndefined();
  return (res.body.data!.readinessDecisions as DecisionOut[]).reverse();
}

export async function readinessOf(api: TestApi, consumer: string, businessDate: string) {
  const res = await api.gql(READINESS, { consumer, businessDate }, { token: 'viewer' });
  expect(res.body.errors).toBeUndefined();
  return res.body.data!.readiness as {
    ready: boolean;
    gateDefined: boolean;
    jobs: Array<{
      jobId: string;
      ready: boolean;
      reason: string | null;
      attempt: number | null;
      state: string | null;
      runId: string | null;
      latest: { source: string; startedAt: string } | null;
      deadline: string | null;
      deadlineOutcome: string | null;
    }>;
    decision: DecisionOut | null;
  };
}

/** A gate over fresh job ids, with every job's attempt 1 SUCCEEDED for the date when `ready`. */
export async function gateWithJobs(api: TestApi, businessDate: string, options: { jobs?: number; ready?: boolean } = {}) {
  const consumer = unique('consumer');
  const jobs = Array.from({ length: options.jobs ?? 2 }, (_, i) => unique(`job${i}`));
  await defineGate(api, consumer, jobs);
  if (options.ready ?? true) {
    for (const jobId of jobs) await observed(api, { jobId, businessDate, state: 'SUCCEEDED' });
  }
  return { consumer, jobs };
}

export function publishInput(consumer: string, businessDate: string, output: Record<string, unknown> = { totalCents: 17_500 }) {
  return { input: { consumer, businessDate, output } };
}

/** A PUBLISHED run (of 7 rows) validated and marked SUCCESS. */
export async function toSuccess(api: TestApi, runId: string) {
  const target = await recordMetrics(api, runId, 'TARGET', [metric('TARGET_COUNT', 'PASS', '7')]);
  expect(target.body.errors).toBeUndefined();
  const res = await api.gql(MARK_SUCCESS, { input: { runId, targetCount: '7' } });
  expect(res.body.data!.markSuccess.runStatus).toBe('SUCCESS');
}
