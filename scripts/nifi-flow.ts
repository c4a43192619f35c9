// npm run nifi:flow — writes nifi/load-control-flow.json from nifi/load-control-flow.ts and the request templates
// under nifi/requests. The kit's test fails while the committed file differs from what this writes.
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { FLOW_FILE, flowJson } from '../nifi/load-control-flow.js';

writeFileSync(FLOW_FILE, flowJson());
console.log(`wrote ${fileURLToPath(FLOW_FILE)}`);
