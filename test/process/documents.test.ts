// The GraphQL documents against the schema: schema/documents/graphql-env.d.ts (gql.tada's introspection, what types the
// documents) must be the one schema/schema.graphql gives, and every document must validate against the schema.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildSchema, Kind, type DocumentNode, validate } from 'graphql';
import { describe, expect, it } from 'vitest';
import { graphql } from '../../schema/documents/graphql.js';
import { NIFI_REQUESTS } from '../../schema/documents/nifi.js';
import * as operator from '../../schema/documents/operator.js';
import * as live from '../../web/src/api/live.js';
import * as console_ from '../../web/src/api/operations.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const schema = buildSchema(readFileSync(join(ROOT, 'schema/schema.graphql'), 'utf8'));

const documents = [
  ...Object.entries(NIFI_REQUESTS),
  ...Object.entries(operator),
  ...Object.entries(console_),
  ...Object.entries(live),
].filter((entry): entry is [string, DocumentNode] => typeof entry[1] === 'object' && (entry[1] as DocumentNode).kind === Kind.DOCUMENT);

describe("the documents of the API's clients (schema/documents/, the console's web/src/api)", () => {
  it('are typed from the current schema (run `npm run schema` after changing the API)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'lc-tada-'));
    try {
      const output = join(dir, 'graphql-env.d.ts');
      execFileSync(
        join(ROOT, 'node_modules/.bin/gql-tada'),
        ['generate', 'output', '--tsconfig', 'web/tsconfig.json', '--output', output],
        {
          cwd: ROOT,
          stdio: 'pipe',
        },
      );
      expect(readFileSync(join(ROOT, 'schema/documents/graphql-env.d.ts'), 'utf8')).toBe(readFileSync(output, 'utf8'));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('all validate against schema/schema.graphql', () => {
    expect(documents.map(([name]) => name)).toEqual(expect.arrayContaining(['RUN', 'CANCEL_RUN', 'PG-20/reportChunk']));
    for (const [name, document] of documents) {
      expect({ name, errors: validate(schema, document).map((e) => e.message) }).toEqual({ name, errors: [] });
    }
  });

  it('are checked: a field the schema lacks fails validation', () => {
    const wrong = graphql(`query Wrong { me { name nickname } }`);
    expect(validate(schema, wrong as DocumentNode).map((e) => e.message)).toEqual([
      'Cannot query field "nickname" on type "Me". Did you mean "name"?',
    ]);
  });
});
