// npm run nifi:components — writes nifi/nifi-components.json from Apache NiFi's own artifacts (Maven Central,
// cached under ~/.cache/load-control). The kit's engine test fails while the committed file differs from what this
// writes.
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { CATALOGUE_FILE, componentCatalogueJson } from '../nifi/component-catalogue.js';

writeFileSync(CATALOGUE_FILE, componentCatalogueJson());
console.log(`wrote ${fileURLToPath(CATALOGUE_FILE)}`);
