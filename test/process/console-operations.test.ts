// The console's operations against the schema: web/src/api/graphql-env.d.ts (gql.tada's introspection, what types
// the operations) must be the one schema/schema.graphql gives, and every operation must validate against the schema.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildSchema, Kind, type DocumentNode, validate } from 'graphql';
import { describe, expect, it } from 'vitest';
import * as operations from '../../web/src/api/operations.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const schema = buildSchema(readFileSync(join(ROOT, 'schema/schema.graphql'), 'utf8'));

const documents = Object.entries(operations).filter(
  (entry): entry is [string, DocumentNode] => typeof entry[1] === 'object' && (entry[1] as DocumentNode).kind === Kind.DOCUMENT,
);

describe("the console's operations", () => {
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
      expect(readFileSync(join(ROOT, 'web/src/api/graphql-env.d.ts'), 'utf8')).toBe(readFileSync(output, 'utf8'));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('all validate against schema/schema.graphql', () => {
    expect(documents.map(([name]) => name)).toContain('RUN');
    for (const [name, document] of documents) {
      expect({ name, errors: validate(schema, document).map((e) => e.message) }).toEqual({ name, errors: [] });
    }
  });

  it('are checked: a field the schema lacks fails validation', () => {
    const wrong = operations.graphql(`query Wrong { me { name nickname } }`);
    expect(validate(schema, wrong as DocumentNode).map((e) => e.message)).toEqual([
      'Cannot query field "nickname" on type "Me". Did you mean "name"?',
    ]);
  });
});
