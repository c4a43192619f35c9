// npm run nifi:flow — writes nifi/load-control-flow.json from nifi/load-control-flow.ts and the request templates
// under nifi/requests, and documents/nifi.ts from the same templates. The kit's test fails while a committed file
// differs from what this writes.
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { KIT_DOCUMENTS_FILE, kitDocumentsModule } from '../nifi/kit.js';
import { FLOW_FILE, flowJson } from '../nifi/load-control-flow.js';

writeFileSync(FLOW_FILE, flowJson());
console.log(`wrote ${fileURLToPath(FLOW_FILE)}`);
writeFileSync(KIT_DOCUMENTS_FILE, kitDocumentsModule());
console.log(`wrote ${fileURLToPath(KIT_DOCUMENTS_FILE)}`);
