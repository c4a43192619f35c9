// The OpenLineage events a test produced, checked by OpenLineage's own artifacts on a JVM
// (openlineage-validator/OpenLineageValidator.java says how): openlineage-java and networknt's JSON Schema validator
// from Maven Central, fetched and run by the machinery that runs NiFi's own code (nifi/nifi-engine.ts).
import { fileURLToPath } from 'node:url';
import { resolveArtifacts, runJava } from '../../nifi/nifi-engine.js';

const OPENLINEAGE_JAVA_VERSION = '1.46.0';
const ARTIFACTS = [
  { group: 'io.openlineage', artifact: 'openlineage-java', version: OPENLINEAGE_JAVA_VERSION },
  { group: 'com.networknt', artifact: 'json-schema-validator', version: '3.0.9' },
  // the annotations Jackson 3 (the validator's) asks for; openlineage-java's Jackson 2.15 works with them too
  { group: 'com.fasterxml.jackson.core', artifact: 'jackson-annotations', version: '2.21' },
];
const VALIDATOR = fileURLToPath(new URL('./openlineage-validator/OpenLineageValidator.java', import.meta.url));
/** The spec's schemas at the release openlineage-java was built from (the OpenLineage repository's tag), and ours. */
const SCHEMA_DIRS = [
  fileURLToPath(new URL(`../fixtures/openlineage-spec-${OPENLINEAGE_JAVA_VERSION}/`, import.meta.url)),
  fileURLToPath(new URL('../../schema/openlineage/', import.meta.url)),
];

export interface ValidatedEvents {
  /** Per event, what the schemas or the model refused; empty when it passed both. */
  results: Array<{ errors: string[] }>;
  /** openlineage-java's version as its jar says it. */
  openlineageJava: string;
  /** How many schema files the validator read. */
  schemas: number;
}

/** Every event checked in one JVM. */
export function validateOpenLineageEvents(events: unknown[]): ValidatedEvents {
  const classpath = resolveArtifacts(`openlineage-validator-${OPENLINEAGE_JAVA_VERSION}`, ARTIFACTS);
  return runJava(VALIDATOR, classpath, { schemaDirs: SCHEMA_DIRS, events }) as ValidatedEvents;
}
