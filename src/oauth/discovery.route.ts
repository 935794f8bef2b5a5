import type { FastifyInstance, FastifyReply } from 'fastify';
import { z } from 'zod';
import type { Config } from '../config.ts';
import type { AppContext } from '../context.ts';
import { addRoute } from '../http/routes.ts';
import { DEFAULT_SCOPES, SCOPES } from './scopes.ts';

/** RFC 9728 metadata of the MCP endpoint as a protected resource. */
export function protectedResourceMetadata(config: Pick<Config, 'mcpUrl' | 'authUrl' | 'baseUrl'>) {
  return {
    resource: `${config.mcpUrl}/mcp`,
    authorization_servers: [config.authUrl],
    scopes_supported: DEFAULT_SCOPES,
    bearer_methods_supported: ['header'],
    resource_documentation: `${config.baseUrl}/docs`,
  };
}

/** RFC 8414 metadata of the authorization server. No registration endpoint: clients are identified by Client ID Metadata Documents. */
export function authorizationServerMetadata(config: Pick<Config, 'authUrl'>) {
  const at = config.authUrl;
  return {
    issuer: at,
    authorization_endpoint: `${at}/oauth/authorize`,
    token_endpoint: `${at}/oauth/token`,
    revocation_endpoint: `${at}/oauth/revoke`,
    jwks_uri: `${at}/.well-known/jwks.json`,
    scopes_supported: SCOPES.map((s) => s.scope),
    response_types_supported: ['code'],
    response_modes_supported: ['query'],
    grant_types_supported: ['authorization_code', 'refresh_token', 'client_credentials'],
    token_endpoint_auth_methods_supported: ['none', 'client_secret_basic', 'client_secret_post'],
    revocation_endpoint_auth_methods_supported: ['none', 'client_secret_basic', 'client_secret_post'],
    code_challenge_methods_supported: ['S256'],
    client_id_metadata_document_supported: true,
    authorization_response_iss_parameter_supported: true,
  };
}

const ProtectedResource = z.object({
  resource: z.string(),
  authorization_servers: z.array(z.string()),
  scopes_supported: z.array(z.string()),
  bearer_methods_supported: z.array(z.string()),
  resource_documentation: z.string(),
});

const metadata = (reply: FastifyReply, body: object) =>
  reply.header('cache-control', 'public, max-age=3600').header('access-control-allow-origin', '*').send(body);

export function registerDiscoveryRoutes(app: FastifyInstance, context: AppContext): void {
  // RFC 9728 §3.1: clients ask for the resource's path after the well-known one, or for the bare one.
  const protectedResource = {
    '/.well-known/oauth-protected-resource': 'getProtectedResourceMetadata',
    '/.well-known/oauth-protected-resource/mcp': 'getMcpProtectedResourceMetadata',
  };
  for (const [url, operationId] of Object.entries(protectedResource)) {
    addRoute(
      app,
      {
        method: 'GET',
        url,
        operationId,
        summary: 'Protected resource metadata of the MCP endpoint (RFC 9728)',
        tag: 'OAuth',
        security: 'none',
        responses: { 200: { description: 'The metadata', schema: ProtectedResource } },
      },
      {},
      async (_request, reply) => metadata(reply, protectedResourceMetadata(context.config)),
    );
  }
  addRoute(
    app,
    {
      method: 'GET',
      url: '/.well-known/oauth-authorization-server',
      operationId: 'getAuthorizationServerMetadata',
      summary: 'Authorization server metadata (RFC 8414)',
      tag: 'OAuth',
      security: 'none',
      responses: { 200: { description: 'The metadata', schema: z.record(z.string(), z.unknown()) } },
    },
    {},
    async (_request, reply) => metadata(reply, authorizationServerMetadata(context.config)),
  );
}
