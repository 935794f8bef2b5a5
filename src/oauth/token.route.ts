import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { TillError } from '../common/errors.ts';
import type { AppContext } from '../context.ts';
import { formFields, registerFormParser, repeatedFields } from '../http/forms.ts';
import { addRoute } from '../http/routes.ts';
import { authenticateClient } from './clients.ts';
import { unservedMode } from './credential-modes.ts';
import { grantOfRefreshToken } from './grant-secrets.ts';
import { revokeGrant } from './grants.ts';
import { grantOfAccessToken } from './mcp-access.ts';
import { PAYMENT_API_SCOPES } from './scopes.ts';
import { signingKeys } from './signing-keys.ts';
import { authorizationCodeGrant, type GrantAnswer, OAUTH_ERRORS, type OAuthErrorCode, refreshTokenGrant } from './token-grants.ts';
import { checkoutAudience, issueCheckoutToken } from './tokens.ts';

const TOKEN_CORS_HEADERS = {
  'access-control-allow-origin': '*',
  'access-control-allow-methods': 'POST, OPTIONS',
  'access-control-allow-headers': 'Authorization, Content-Type',
  'access-control-max-age': '600',
};

function refuse(reply: FastifyReply, code: OAuthErrorCode, description: string): FastifyReply {
  if (code === 'invalid_client') reply.header('www-authenticate', 'Basic realm="till", charset="UTF-8"');
  return reply.code(OAUTH_ERRORS[code].status).header('cache-control', 'no-store').send({ error: code, error_description: description });
}

function answer(reply: FastifyReply, outcome: GrantAnswer): FastifyReply {
  if ('refuse' in outcome) return refuse(reply, outcome.refuse, outcome.description);
  return reply.header('cache-control', 'no-store').header('pragma', 'no-cache').send(outcome.tokens);
}

/** Client id and secret from HTTP Basic (RFC 6749 §2.3.1: each form-urlencoded), when the header is Basic. */
function basicCredentials(request: FastifyRequest): { id: string; secret: string } | 'malformed' | undefined {
  const header = request.headers.authorization;
  if (!header || !/^basic /i.test(header)) return undefined;
  const decoded = Buffer.from(header.slice(6).trim(), 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 1) return 'malformed';
  try {
    return { id: decodeURIComponent(decoded.slice(0, colon).replace(/\+/g, ' ')), secret: decodeURIComponent(decoded.slice(colon + 1).replace(/\+/g, ' ')) };
  } catch {
    return 'malformed';
  }
}

const TokenResponse = z.object({
  access_token: z.string(),
  token_type: z.literal('Bearer'),
  expires_in: z.number().int(),
  refresh_token: z.string().optional(),
  scope: z.string().optional(),
});
const OAuthError = z.object({ error: z.enum(Object.keys(OAUTH_ERRORS) as [OAuthErrorCode]), error_description: z.string() });

export function registerTokenRoute(app: FastifyInstance, context: AppContext): void {
  app.register(async (oauth) => {
    registerFormParser(oauth);
    // Public clients in a browser (an MCP inspector, say) exchange codes and refresh from any origin;
    // nothing here reads cookies.
    oauth.addHook('onRequest', async (_request, reply) => {
      reply.headers(TOKEN_CORS_HEADERS);
    });
    for (const path of ['/oauth/token', '/oauth/revoke']) oauth.options(path, async (_request, reply) => reply.code(204).send());
    // A body that cannot be read gets the OAuth shape too.
    oauth.setErrorHandler((error, _request, reply) => {
      if (error instanceof TillError && error.status < 500) return refuse(reply, 'invalid_request', error.message);
      throw error;
    });

    addRoute(
      oauth,
      {
        method: 'POST',
        url: '/oauth/token',
        operationId: 'requestToken',
        summary: 'Token endpoint: client credentials for the payment API; authorization code and refresh token for coding agents',
        description:
          '`grant_type=client_credentials` takes `client_id`, `client_secret` and `audience` (`{base_url}/checkout`, the only one) as a JSON or form body, or HTTP Basic, and an optional `scope` narrowing the token to `refunds:read` and/or `refunds:write` (without it the token may do everything the payment API does, as an API key may); the token is valid 24 h. `grant_type=authorization_code` takes `code`, `redirect_uri`, `code_verifier` (PKCE) and `client_id` (the metadata document URL; no secret); `grant_type=refresh_token` takes `refresh_token` and `client_id`, and answers a new refresh token each time (a used one presented again revokes the authorization). Coding agents get a 15-minute token for `{mcp_url}/mcp` with a `refresh_token` and `scope`. Tokens are ES256 JWTs (`typ` `at+jwt`), verifiable with `/.well-known/jwks.json`. Errors follow RFC 6749 §5.2.',
        tag: 'OAuth',
        security: 'none',
        responses: {
          200: { description: 'The access token', schema: TokenResponse },
          400: { description: '`invalid_request`, `invalid_grant`, `invalid_scope`, `unsupported_grant_type` or `invalid_target`', schema: OAuthError },
          401: { description: '`invalid_client`', schema: OAuthError },
        },
      },
      {},
      async (request, reply) => {
        const repeated = repeatedFields(request);
        if (repeated.length) return refuse(reply, 'invalid_request', `${repeated[0]} is given more than once`);
        const fields = formFields(request);
        if (fields.grant_type === undefined) return refuse(reply, 'invalid_request', 'grant_type is required');
        if (fields.grant_type === 'authorization_code' || fields.grant_type === 'refresh_token') {
          if (basicCredentials(request) !== undefined || fields.client_secret !== undefined)
            return refuse(reply, 'invalid_client', 'coding agents are public clients (token_endpoint_auth_method none): send client_id only');
          const grant = fields.grant_type === 'authorization_code' ? authorizationCodeGrant : refreshTokenGrant;
          return answer(reply, await grant(context, fields));
        }
        if (fields.grant_type !== 'client_credentials')
          return refuse(reply, 'unsupported_grant_type', 'grant_type must be client_credentials, authorization_code or refresh_token');
        const audience = fields.audience ?? fields.resource ?? checkoutAudience(context.config);
        if (audience !== checkoutAudience(context.config) || (fields.resource !== undefined && fields.resource !== audience))
          return refuse(reply, 'invalid_target', `the only audience is ${checkoutAudience(context.config)}`);
        const basic = basicCredentials(request);
        if (basic === 'malformed') return refuse(reply, 'invalid_client', 'the Basic credentials are malformed');
        if (
          basic &&
          (fields.client_id !== undefined || fields.client_secret !== undefined) &&
          (fields.client_id !== basic.id || fields.client_secret !== undefined)
        )
          return refuse(reply, 'invalid_request', 'authenticate with HTTP Basic or with client_id and client_secret in the body, not both');
        const id = basic?.id ?? fields.client_id;
        const secret = basic?.secret ?? fields.client_secret;
        if (!id || !secret) return refuse(reply, 'invalid_client', 'client_id and client_secret are required');
        const client = await authenticateClient(context.db, id, secret);
        if (!client) return refuse(reply, 'invalid_client', 'the client is unknown or revoked, or the secret is wrong');
        const unserved = unservedMode(context.config, client.mode, 'this client was made');
        if (unserved) return refuse(reply, 'invalid_client', unserved);
        const scopes = fields.scope === undefined ? undefined : [...new Set(fields.scope.split(' ').filter(Boolean))];
        const unknownScope = scopes?.find((scope) => !(PAYMENT_API_SCOPES as readonly string[]).includes(scope));
        if (scopes?.length === 0 || unknownScope !== undefined)
          return refuse(reply, 'invalid_scope', `scope must be one or more of ${PAYMENT_API_SCOPES.join(', ')}, space-separated (or left out: every scope)`);
        const { accessToken, expiresIn } = await issueCheckoutToken(context.db, context.config, client, context.now(), scopes);
        return answer(reply, {
          tokens: { access_token: accessToken, token_type: 'Bearer', expires_in: expiresIn, ...(scopes ? { scope: scopes.join(' ') } : {}) },
        });
      },
    );

    addRoute(
      oauth,
      {
        method: 'POST',
        url: '/oauth/revoke',
        operationId: 'revokeToken',
        summary: 'Token revocation (RFC 7009) for coding agents',
        description:
          'Takes `token` (a refresh token or an access token), optional `token_type_hint`, and `client_id` as a form (or JSON) body. Revoking either ends the whole authorization: its refresh tokens stop at once and its access tokens at their next call. Answers 200 whether or not the token was known, as RFC 7009 asks; a token of another client is left alone.',
        tag: 'OAuth',
        security: 'none',
        responses: {
          200: { description: 'Revoked, or nothing to revoke' },
          400: { description: '`invalid_request`', schema: OAuthError },
          401: { description: '`invalid_client`', schema: OAuthError },
        },
      },
      {},
      async (request, reply) => {
        const repeated = repeatedFields(request);
        if (repeated.length) return refuse(reply, 'invalid_request', `${repeated[0]} is given more than once`);
        const { token, client_id: clientId } = formFields(request);
        if (!token) return refuse(reply, 'invalid_request', 'token is required');
        if (!clientId) return refuse(reply, 'invalid_client', 'client_id is required');
        const grantId = (await grantOfRefreshToken(context.db, token, clientId)) ?? (await grantOfAccessToken(context, token, clientId));
        if (grantId) await revokeGrant(context.db, grantId, 'client', context.now());
        return reply.code(200).header('cache-control', 'no-store').send();
      },
    );
  });

  addRoute(
    app,
    {
      method: 'GET',
      url: '/.well-known/jwks.json',
      operationId: 'getSigningKeys',
      summary: 'The public keys that sign access tokens (JWKS)',
      tag: 'OAuth',
      security: 'none',
      responses: { 200: { description: 'A JSON Web Key Set', schema: z.object({ keys: z.array(z.record(z.string(), z.string())) }) } },
    },
    {},
    async (_request, reply) => {
      const { published } = await signingKeys(context.db, context.config.secretKey, context.now());
      return reply.header('cache-control', 'public, max-age=300').send({ keys: published });
    },
  );
}
