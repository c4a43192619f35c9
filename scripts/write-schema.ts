// Writes schema/schema.graphql from the code; test/unit/schema.test.ts fails when the committed file is stale.
import { writeFileSync } from 'node:fs';
import { printSchemaSdl } from '../src/graphql/schema.js';

writeFileSync(new URL('../schema/schema.graphql', import.meta.url), printSchemaSdl());
console.log('schema/schema.graphql written');
