// Strings PostgreSQL cannot store, refused before execution — alone, through yoga.fetch on a small schema.
import { beforeEach, describe, expect, it } from 'vitest';
import { ACTORS, capturingLogger, executed, post, smallYoga } from '../../support/small-api.js';
import { useErrorEnvelope } from '../../../src/server/error-envelope.js';
import { MAX_NESTING, useStorableInputs } from '../../../src/server/storable-inputs.js';

const yoga = smallYoga([useStorableInputs(), useErrorEnvelope(capturingLogger().log)]);
beforeEach(() => {
  executed.length = 0;
});

const ACT = 'mutation($input: String, $parameters: JSON) { act(input: $input, parameters: $parameters) }';
const act = (variables: Record<string, unknown>) => post(yoga, ACT, { variables, actor: ACTORS.nifi });

describe('in variables', () => {
  it.each([
    ['a lone high surrogate in a string', { input: 'key-\ud800' }, 'input', 'surrogate'],
    ['a lone low surrogate in JSON', { parameters: { note: 'x\udc00y' } }, 'parameters.note', 'surrogate'],
    ['a reversed pair in a JSON key', { parameters: { 'k\udc00\ud800': 1 } }, 'parameters', 'surrogate'],
    ['NUL in a JSON list', { parameters: { list: ['ok', 'a\u0000b'] } }, 'parameters.list.1', 'NUL'],
  ])('refuses %s with 422 INVALID_INPUT naming the field, before anything runs', async (_name, variables, field, reason) => {
    const res = await act(variables);
    expect([res.status, res.code, res.details?.field]).toEqual([422, 'INVALID_INPUT', field]);
    expect(String(res.details?.reason)).toContain(reason);
    expect(executed).toEqual([]);
  });

  it(`refuses JSON nested more than ${MAX_NESTING} levels`, async () => {
    const nested = (levels: number) => JSON.parse(`${'{"n":'.repeat(levels)}1${'}'.repeat(levels)}`);
    expect((await act({ parameters: nested(MAX_NESTING) })).status).toBe(200);
    const res = await act({ parameters: nested(MAX_NESTING + 2) });
    expect([res.status, res.code]).toEqual([422, 'INVALID_INPUT']);
    expect(String(res.details?.reason)).toContain('nested');
  });

  it('refuses variables nested ten thousand levels deep with 422, not a stack overflow', async () => {
    // written by hand: JSON.stringify itself overflows the stack at this depth
    const parameters = `${'{"n":'.repeat(10_000)}1${'}'.repeat(10_000)}`;
    const res = await yoga.fetch(
      'http://test/graphql',
      {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: `{"query":${JSON.stringify(ACT)},"variables":{"parameters":${parameters}}}`,
      },
      { actor: ACTORS.nifi },
    );
    const body = (await res.json()) as { errors: Array<{ extensions: { code: string } }> };
    expect([res.status, body.errors[0]!.extensions.code]).toEqual([422, 'INVALID_INPUT']);
  });

  it('accepts well-formed pairs: an emoji passes as sent', async () => {
    expect((await act({ input: 'load 🚚 done', parameters: { note: '🚚' } })).body).toEqual({ data: { act: 1 } });
  });
});

describe('in document literals', () => {
  it("refuses NUL in an argument and in a variable's default, naming the path", async () => {
    const argument = await post(yoga, 'mutation { act(parameters: { note: "a\\u0000b" }) }', { actor: ACTORS.nifi });
    expect([argument.status, argument.code, argument.details?.field]).toEqual([422, 'INVALID_INPUT', 'parameters.note']);
    const defaulted = await post(yoga, 'mutation($input: String = "a\\u0000b") { act(input: $input) }', { actor: ACTORS.nifi });
    expect([defaulted.status, defaulted.details?.field]).toEqual([422, 'input']);
    expect(executed).toEqual([]);
  });

  it('refuses JSON literals nested too deep', async () => {
    const deep = await post(yoga, `mutation { act(parameters: ${'{ n: '.repeat(70)}1${' }'.repeat(70)}) }`, { actor: ACTORS.nifi });
    expect([deep.status, deep.code]).toEqual([422, 'INVALID_INPUT']);
    expect(String(deep.details?.reason)).toContain('nested');
  });
});
