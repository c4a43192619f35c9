// Audit of who acted: every event a request writes records the caller's name, how it was authenticated and, for
// a provider's JWT, the issuer and subject: through the transaction paths (createRun, manifest, an operator's
// cancelRun) and the single-statement hot paths (claimPartition, reportChunk), against a `serve` process.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApi } from '../support/api.js';
import { startTestApiProcess, type TestApiProcess } from '../support/api-process.js';
import { CANCEL_RUN, completeRun, startRun } from '../support/fixtures.js';
import { startTestProvider, type TestProvider } from '../support/oidc-provider.js';

let provider: TestProvider;
let api: TestApiProcess;

beforeAll(async () => {
  provider = await startTestProvider({
    clients: [
      { id: 'nifi-node', secret: 'nifi-secret', grant: 'client_credentials', roles: ['nifi'] },
      { id: 'runbook-bot', secret: 'bot-secret', grant: 'client_credentials', roles: ['operator'] },
    ],
  });
  const oidc = { issuer: provider.issuer, audience: provider.settings.audience };
  api = await startTestApiProcess({ env: { LC_AUTH__OIDC: JSON.stringify(oidc) } });
});
afterAll(async () => {
  await api?.close();
  await provider?.stop();
});

/** The API as a caller holding this JWT sees it: the fixtures' calls go out with it. */
const withJwt = (token: string): TestApi => ({
  ...api,
  gql: (query, variables, options = {}) =>
    api.gql(query, variables, { ...options, token: null, headers: { Authorization: `Bearer ${token}`, ...options.headers } }),
});

type AuditedEvent = {
  name: string;
  actor: string;
  authenticatedBy: string | null;
  actorIssuer: string | null;
  actorSubject: string | null;
};
async function events(runId: string): Promise<AuditedEvent[]> {
  const res = await api.gql<{ run: { events: AuditedEvent[] } }>(
    'query($runId: UUID!) { run(runId: $runId) { events(last: 50) { name actor authenticatedBy actorIssuer actorSubject } } }',
    { runId },
    { token: 'viewer' },
  );
  return res.body.data!.run.events;
}

describe('the audit trail', () => {
  it("records a machine's JWT subject on every event of its calls, the hot paths' included", async () => {
    const run = await completeRun(withJwt(await provider.clientToken('nifi-node')), [2, 3]);
    const written = await events(run.runId);
    expect(written.map((e) => e.name)).toEqual(expect.arrayContaining(['PARTITION_STARTED', 'PARTITION_SUCCESS', 'EXTRACT_VALIDATED']));
    for (const event of written) {
      expect(event, event.name).toEqual({
        name: event.name,
        actor: 'nifi-node',
        authenticatedBy: 'JWT',
        actorIssuer: provider.issuer,
        actorSubject: 'nifi-node',
      });
    }
  });

  it("records an operator's action with how it was authenticated, a static token's by its name", async () => {
    const byJwt = await startRun(api, [1]);
    const cancel = await withJwt(await provider.clientToken('runbook-bot')).gql(CANCEL_RUN, {
      input: { runId: byJwt.runId, reason: 'superseded by a rerun' },
    });
    expect(cancel.status).toBe(200);
    const cancelled = (await events(byJwt.runId)).find((e) => e.name === 'RUN_CANCELLED');
    expect(cancelled).toMatchObject({
      actor: 'runbook-bot',
      authenticatedBy: 'JWT',
      actorIssuer: provider.issuer,
      actorSubject: 'runbook-bot',
    });

    const byToken = await startRun(api, [1]);
    await api.gql(CANCEL_RUN, { input: { runId: byToken.runId, reason: 'superseded by a rerun' } }, { token: 'operator' });
    const all = await events(byToken.runId);
    expect(all.find((e) => e.name === 'RUN_CANCELLED')).toEqual({
      name: 'RUN_CANCELLED',
      actor: 'alice-operator',
      authenticatedBy: 'TOKEN',
      actorIssuer: null,
      actorSubject: null,
    });
    const nifis = all.filter((e) => e.name !== 'RUN_CANCELLED');
    expect(nifis.length).toBeGreaterThan(0);
    for (const event of nifis)
      expect(event, event.name).toMatchObject({ actor: 'nifi-cluster', authenticatedBy: 'TOKEN', actorSubject: null });
  });
});
