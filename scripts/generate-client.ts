// Writes the typed client's types (packages/client/src/openapi.ts) from the OpenAPI document the
// service serves. Run after changing a route; test/openapi.test.ts fails while they differ.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CLIENT_TYPES_FILE, clientTypes, everyRouteDocument } from '../src/testing/api-document.ts';

const file = join(import.meta.dirname, '..', CLIENT_TYPES_FILE);
writeFileSync(file, await clientTypes(await everyRouteDocument()));
process.stdout.write(`Wrote ${CLIENT_TYPES_FILE}\n`);
