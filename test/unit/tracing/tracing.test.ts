// The helpers the spans are made with, against the real SDK exporting to a loopback collector stand-in.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type Collector, STATUS, startCollector } from '../../support/otlp-collector.js';
import { until } from '../../support/until.js';
import { DomainError } from '../../../src/contract/errors.js';
import { createLogger } from '../../../src/logging/logger.js';
import { activeTracer, currentTraceparent, inSpan, inTraceparent, startTracing, type Tracing } from '../../../src/tracing/tracing.js';

const log = createLogger({ level: 'fatal', format: 'json' }, 'tracing-test');
let collector: Collector;
let tracing: Tracing | null = null;
beforeAll(async () => {
  collector = await startCollector();
});
afterEach(async () => {
  await tracing?.shutdown();
  tracing = null;
});
afterAll(async () => collector?.close());

const start = async (sampleRatio = 1) => {
  tracing = await startTracing({ endpoint: collector.url, serviceName: 'unit', sampleRatio, headers: {} }, { role: 'unit', log });
};
const exported = async (name: string) => {
  await tracing!.flush();
  return until(`the span ${name}`, () => collector.spans.find((s) => s.name === name));
};

describe('tracing helpers', () => {
  it('nest spans through awaits, hand the active one on as a traceparent and continue one from it', async () => {
    await start();
    let inner = '';
    await inSpan('outer', {}, async () => {
      await new Promise((resolve) => setTimeout(resolve, 1));
      await inSpan('inner', {}, async () => {
        inner = currentTraceparent()!;
      });
    });
    await inTraceparent(inner, () => inSpan('continued', {}, async () => undefined));
    const [outer, child, continued] = [await exported('outer'), await exported('inner'), await exported('continued')];
    expect(child).toMatchObject({ traceId: outer.traceId, parentSpanId: outer.spanId });
    expect(inner).toBe(`00-${child.traceId}-${child.spanId}-01`);
    expect(continued).toMatchObject({ traceId: child.traceId, parentSpanId: child.spanId });
    expect(outer.resource).toMatchObject({ 'service.name': 'unit', 'lc.process.role': 'unit' });
  });

  it('mark a span failed with the code of what was thrown, and throw it on', async () => {
    await start();
    const refused = new DomainError('RUN_NOT_FOUND', { runId: 'r' }, 'run r not found');
    await expect(inSpan('refused', {}, () => Promise.reject(refused))).rejects.toBe(refused);
    await expect(inSpan('broken', {}, () => Promise.reject(new TypeError('no such thing')))).rejects.toThrow('no such thing');
    expect((await exported('refused')).status).toEqual({ code: STATUS.ERROR, message: 'RUN_NOT_FOUND: run r not found' });
    expect((await exported('refused')).attributes['error.type']).toBe('RUN_NOT_FOUND');
    expect((await exported('broken')).attributes['error.type']).toBe('TypeError');
  });

  it('keep none of the traces that start here at sampleRatio 0, but follow a caller that sampled its trace', async () => {
    await start(0);
    await inSpan('unsampled root', {}, async () => expect(currentTraceparent()).toMatch(/-00$/));
    const caller = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
    await inTraceparent(caller, () => inSpan('sampled by the caller', {}, async () => undefined));
    expect((await exported('sampled by the caller')).parentSpanId).toBe('00f067aa0ba902b7');
    expect(collector.spans.filter((s) => s.name === 'unsampled root')).toEqual([]);
  });

  it('stop: nothing is traced afterwards, and a function runs as it is', async () => {
    await start();
    await tracing!.shutdown();
    expect(activeTracer()).toBeNull();
    expect(currentTraceparent()).toBeUndefined();
    expect(await inSpan('after', {}, async () => 42)).toBe(42);
    await start();
    await inSpan('restarted', {}, async () => undefined);
    await exported('restarted');
    expect(collector.spans.filter((s) => s.name === 'after')).toEqual([]);
  });
});
