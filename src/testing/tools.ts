import { fileURLToPath } from 'node:url';

/** The MCP Inspector's CLI, installed apart in test/tools/mcp-inspector/ before `npm test` (scripts/test-tools.ts). */
export const MCP_INSPECTOR_CLI = fileURLToPath(
  new URL('../../test/tools/mcp-inspector/node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js', import.meta.url),
);
