import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { printSchemaSdl } from '../../src/graphql/schema.js';

describe('schema/schema.graphql', () => {
  it('is the schema the code generates (run `npm run schema` after changing the API)', () => {
    const committed = readFileSync(new URL('../../schema/schema.graphql', import.meta.url), 'utf8');
    expect(committed).toBe(printSchemaSdl());
  });
});
