// Which requests run on an execution thread: decided from the request alone, before Yoga sees it.
import { describe, expect, it } from 'vitest';
import { belongsOnLane } from '../../../src/server/execution-lane.js';

const post = (params: Record<string, unknown>, accept = 'application/json') => ({
  method: 'POST',
  accept,
  url: '/graphql',
  body: Buffer.from(JSON.stringify(params)),
});

describe('belongsOnLane', () => {
  it('sends queries to a thread, and keeps mutations and subscriptions on the main thread', () => {
    expect(belongsOnLane(post({ query: '{ runs(first: 1) { nodes { runId } } }' }))).toBe(true);
    expect(belongsOnLane(post({ query: 'query Runs { runs(first: 1) { nodes { runId } } }' }))).toBe(true);
    expect(belongsOnLane(post({ query: 'mutation M($input: CreateRunInput!) { createRun(input: $input) { runId } }' }))).toBe(false);
    expect(belongsOnLane(post({ query: 'subscription { alertRaised { kind } }' }))).toBe(false);
  });

  it('follows operationName in a document with several operations', () => {
    const document = 'query Q { gates { consumer } } mutation M { recordEvent(input: {}) { eventId } }';
    expect(belongsOnLane(post({ query: document, operationName: 'Q' }))).toBe(true);
    expect(belongsOnLane(post({ query: document, operationName: 'M' }))).toBe(false);
    // no operationName with two operations: Yoga's 400, from the main thread
    expect(belongsOnLane(post({ query: document }))).toBe(false);
  });

  it('sends GET queries to a thread, and keeps every event stream on the main thread', () => {
    const query = encodeURIComponent('{ gates { consumer } }');
    expect(belongsOnLane({ method: 'GET', accept: 'application/json', url: `/graphql?query=${query}`, body: null })).toBe(true);
    expect(belongsOnLane({ method: 'GET', accept: 'text/event-stream', url: `/graphql?query=${query}`, body: null })).toBe(false);
    expect(belongsOnLane(post({ query: '{ gates { consumer } }' }, 'text/event-stream'))).toBe(false);
  });

  it('keeps every operation posted to a single-connection stream (/graphql/stream) on the main thread, where the stream lives', () => {
    const onStream = (params: Record<string, unknown>) => ({ ...post(params), url: '/graphql/stream' });
    expect(belongsOnLane(onStream({ query: '{ gates { consumer } }', extensions: { operationId: 'a' } }))).toBe(false);
    expect(belongsOnLane(onStream({ query: '{ gates { consumer } }', variables: { pad: 'x'.repeat(64 * 1024) } }))).toBe(false);
    expect(belongsOnLane({ method: 'PUT', accept: '*/*', url: '/graphql/stream', body: null })).toBe(false);
  });

  it('sends any body of 64 KiB or more to a thread, a mutation included', () => {
    const large = post({ query: 'mutation { __typename }', variables: { pad: 'x'.repeat(64 * 1024) } });
    expect(belongsOnLane(large)).toBe(true);
  });

  it('leaves what does not parse to the main thread, which answers it 400', () => {
    expect(belongsOnLane({ method: 'POST', accept: '', url: '/graphql', body: Buffer.from('{"query": "{') })).toBe(false);
    expect(belongsOnLane(post({ query: '{ runs(' }))).toBe(false);
    expect(belongsOnLane(post({ query: 42 }))).toBe(false);
    expect(belongsOnLane(post({ query: `{ ${'a '.repeat(6000)} }` }))).toBe(false);
    expect(belongsOnLane({ method: 'POST', accept: '', url: '/graphql', body: Buffer.from('[1, 2]') })).toBe(false);
  });
});
