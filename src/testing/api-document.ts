// The OpenAPI document as a service with every route serves it, and the client types generated from it
// (packages/client): scripts/generate-client.ts writes them, test/openapi.test.ts checks the committed ones.
import openapiTS, { astToString } from 'openapi-typescript';
import { startTestService } from './harness.ts';

/** Every route registered, x402 and sandbox ones included; nothing is called, so the URLs lead nowhere. */
export const EVERY_ROUTE = {
  TILL_SANDBOX: 'true',
  TILL_FACILITATOR_URL: 'http://127.0.0.1:9',
  TILL_USDC_ADDRESS: '0xae47EB9b9c9E6903b1e91C471308F98b5d2C3049',
  TILL_SANDBOX_URL: 'http://127.0.0.1:9',
};

export const CLIENT_TYPES_FILE = 'packages/client/src/openapi.ts';

/** `GET /openapi.json` of a service with every route, on SQLite. */
export async function everyRouteDocument(): Promise<Record<string, unknown>> {
  const service = await startTestService('sqlite', EVERY_ROUTE);
  try {
    return (await service.app.inject({ method: 'GET', url: '/openapi.json' })).json();
  } finally {
    await service.stop();
  }
}

/** The client's types (`paths`, `components`, `operations`, `webhooks`), as openapi-typescript generates them from the document. */
export async function clientTypes(document: Record<string, unknown>): Promise<string> {
  const types = astToString(await openapiTS(structuredClone(document) as unknown as Parameters<typeof openapiTS>[0]));
  return `// Generated from Till's OpenAPI document (GET /openapi.json) by openapi-typescript: run \`npm run generate:client\`, do not edit.\n${types}`;
}
