// npm run nifi:flow — writes the flow files (nifi/load-control-flow.json and, for NiFi 2.7.0 and later,
// nifi/load-control-flow-2.7.json, each also with an OAuth2 access-token provider: …-oauth2.json) from nifi/load-control-flow.ts and the request templates under nifi/requests, and
// schema/documents/nifi.ts from the same templates. The kit's test fails while a committed file differs from what this writes.
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { KIT_DOCUMENTS_FILE, kitDocumentsModule } from '../nifi/kit.js';
import { FLOW_FILES, flowJson } from '../nifi/load-control-flow.js';

for (const { nifi, apiAuth, file, range } of FLOW_FILES) {
  writeFileSync(file, flowJson(nifi, apiAuth));
  console.log(`wrote ${fileURLToPath(file)} (${range})`);
}
writeFileSync(KIT_DOCUMENTS_FILE, kitDocumentsModule());
console.log(`wrote ${fileURLToPath(KIT_DOCUMENTS_FILE)}`);
