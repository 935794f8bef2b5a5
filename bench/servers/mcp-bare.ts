// The SDK's bare stateless MCP server, the yardstick of the mcp bench: node:http and
// createMcpHandler from @modelcontextprotocol/server (2025 clients served statelessly), one tool
// answering a constant, no authentication, no database. Listens on PORT of 127.0.0.1.
import { createServer } from 'node:http';
import { toNodeHandler } from '@modelcontextprotocol/node';
import { createMcpHandler, McpServer } from '@modelcontextprotocol/server';

const SETTINGS = { businessName: 'Bench', payoutAddressConfigured: true, chains: [{ name: 'base', tokens: ['USDC'], payoutAddressConfigured: true }] };

const handler = createMcpHandler(
  () => {
    const server = new McpServer({ name: 'bare', version: '1.0.0' });
    server.registerTool('get_payment_settings', { description: 'A constant' }, async () => ({
      content: [{ type: 'text', text: JSON.stringify(SETTINGS, null, 2) }],
    }));
    return server;
  },
  { legacy: 'stateless' },
);

const server = createServer(toNodeHandler(handler));
process.on('SIGTERM', () => server.close());
server.listen(Number(process.env.PORT), '127.0.0.1');
