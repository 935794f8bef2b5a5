import { createHash } from 'node:crypto';
import type { AppContext } from '../context.ts';
import type { Tx } from '../db/index.ts';
import { grantRefusal } from './credential-modes.ts';
import { type Consumed, consumeGrantSecret, issueGrantSecret } from './grant-secrets.ts';
import { activeGrant, type Grant, orderedScopes } from './grants.ts';
import { issueMcpToken, mcpAudience } from './tokens.ts';

/**
 * The token endpoint's refusals, in RFC 6749 §5.2's shape `{ error, error_description }` (not the
 * payment API's): a second closed table, listed in docs/auth.md.
 */
export const OAUTH_ERRORS = {
  invalid_request: { status: 400, meaning: 'A parameter is missing, repeated or malformed, or the client authenticated in two ways at once' },
  invalid_client: { status: 401, meaning: 'Unknown client, wrong secret, or a revoked client' },
  invalid_grant: {
    status: 400,
    meaning:
      'The code or refresh token is unknown, expired, already used (which revokes the grant), for another client or redirect URI, or its PKCE verifier is wrong; or its authorization is of a mode this deployment does not serve, or of a development client (http on this machine) that is live or no longer accepted',
  },
  invalid_scope: {
    status: 400,
    meaning: 'A refresh asked for a scope the grant does not have, or a client-credentials request a scope the payment API does not have',
  },
  unsupported_grant_type: { status: 400, meaning: 'The grant_type is not client_credentials, authorization_code or refresh_token' },
  invalid_target: { status: 400, meaning: 'The audience (or resource) is not the one this client may have: `{base_url}/checkout` or `{mcp_url}/mcp`' },
} as const;

export type OAuthErrorCode = keyof typeof OAUTH_ERRORS;
export type GrantAnswer = { refuse: OAuthErrorCode; description: string } | { tokens: Record<string, string | number> };
type Refusal = Extract<GrantAnswer, { refuse: OAuthErrorCode }>;
/** What a grant's transaction decided: a refusal, or the grant to sign an access token for (after commit). */
type Exchanged = Refusal | { grant: Grant; scopes: Grant['scopes']; refreshToken: string };

const refuse = (code: OAuthErrorCode, description: string): Refusal => ({ refuse: code, description });
const VERIFIER = /^[A-Za-z0-9._~-]{43,128}$/;

/** PKCE S256 (RFC 7636 §4.6): the challenge is the base64url SHA-256 of the verifier. */
const challengeOf = (verifier: string) => createHash('sha256').update(verifier).digest('base64url');

/** The next refresh token of a grant, in the exchange's transaction, for the grant's scopes (or fewer, when asked). */
async function rotate(context: AppContext, trx: Tx, grant: Grant, scopes = grant.scopes): Promise<Exchanged> {
  const refreshToken = await issueGrantSecret(trx, 'refresh_token', { grantId: grant.id, clientId: grant.clientId }, context.now());
  return { grant, scopes, refreshToken };
}

/** The answer to a committed exchange: the access token is signed after the commit (the keys are read outside it). */
async function answer(context: AppContext, exchanged: Exchanged): Promise<GrantAnswer> {
  if ('refuse' in exchanged) return exchanged;
  const { grant, scopes, refreshToken } = exchanged;
  const { accessToken, expiresIn } = await issueMcpToken(
    context.db,
    context.config,
    { grantId: grant.id, clientId: grant.clientId, merchantId: grant.merchantId, userId: grant.userId, scopes, mode: grant.mode },
    context.now(),
  );
  return { tokens: { access_token: accessToken, token_type: 'Bearer', expires_in: expiresIn, refresh_token: refreshToken, scope: scopes.join(' ') } };
}

function replayed(consumed: Consumed, what: string): Refusal | undefined {
  if (consumed.outcome === 'unknown') return refuse('invalid_grant', `the ${what} is unknown or expired`);
  if (consumed.outcome === 'reused') return refuse('invalid_grant', `the ${what} was already used; the authorization it belonged to is revoked`);
  return undefined;
}

function checkResource(context: AppContext, fields: Record<string, string>): Refusal | undefined {
  const resource = fields.resource ?? fields.audience;
  if (resource !== undefined && resource !== mcpAudience(context.config))
    return refuse('invalid_target', `the only resource is ${mcpAudience(context.config)}`);
  return undefined;
}

/**
 * `authorization_code` (RFC 6749 §4.1.3 with PKCE): the code is used up first, so it works once
 * even when the rest refuses; a second use revokes the grant and with it every token from the code.
 * The whole exchange is one transaction, committed even when it refuses (a revocation must stay).
 */
export async function authorizationCodeGrant(context: AppContext, fields: Record<string, string>): Promise<GrantAnswer> {
  const missing = ['code', 'redirect_uri', 'code_verifier', 'client_id'].find((name) => !fields[name]);
  if (missing) return refuse('invalid_request', `${missing} is required`);
  const wrongTarget = checkResource(context, fields);
  if (wrongTarget) return wrongTarget;
  const exchanged = await context.db.transaction().execute(async (trx): Promise<Exchanged> => {
    const consumed = await consumeGrantSecret(trx, 'code', fields.code!, context.now());
    if (consumed.outcome !== 'consumed') return replayed(consumed, 'code')!;
    const { secret } = consumed;
    if (secret.clientId !== fields.client_id) return refuse('invalid_grant', 'the code was issued to another client');
    if (secret.redirectUri !== fields.redirect_uri) return refuse('invalid_grant', 'redirect_uri is not the one the code was sent to');
    if (!VERIFIER.test(fields.code_verifier!) || challengeOf(fields.code_verifier!) !== secret.codeChallenge)
      return refuse('invalid_grant', 'code_verifier does not match the code_challenge');
    const grant = await activeGrant(trx, secret.grantId);
    if (!grant) return refuse('invalid_grant', 'the authorization was revoked');
    const refused = grantRefusal(context.config, grant, 'the code was issued');
    if (refused) return refuse('invalid_grant', refused.message);
    return rotate(context, trx, grant);
  });
  return answer(context, exchanged);
}

/** `refresh_token` (RFC 6749 §6): rotated on every use; a used one presented again revokes the grant. */
export async function refreshTokenGrant(context: AppContext, fields: Record<string, string>): Promise<GrantAnswer> {
  const missing = ['refresh_token', 'client_id'].find((name) => !fields[name]);
  if (missing) return refuse('invalid_request', `${missing} is required`);
  const wrongTarget = checkResource(context, fields);
  if (wrongTarget) return wrongTarget;
  const exchanged = await context.db
    .transaction()
    .execute(async (trx): Promise<Exchanged> => {
      const consumed = await consumeGrantSecret(trx, 'refresh_token', fields.refresh_token!, context.now());
      if (consumed.outcome !== 'consumed') return replayed(consumed, 'refresh token')!;
      if (consumed.secret.clientId !== fields.client_id) return refuse('invalid_grant', 'the refresh token was issued to another client');
      const grant = await activeGrant(trx, consumed.secret.grantId);
      if (!grant) return refuse('invalid_grant', 'the authorization was revoked');
      // Undone: the refresh token stays as it was, refused while the rule that refuses it stands.
      const refused = grantRefusal(context.config, grant, 'the refresh token was issued');
      if (refused) throw new Undo(refuse('invalid_grant', refused.message));
      if (fields.scope === undefined) return rotate(context, trx, grant);
      const asked = fields.scope.split(' ').filter(Boolean);
      const beyond = asked.find((scope) => !(grant.scopes as string[]).includes(scope));
      // Undone, so the client keeps its refresh token after asking for too much.
      if (beyond) throw new Undo(refuse('invalid_scope', `${beyond} was not granted; ask the merchant again through the authorization endpoint`));
      return rotate(context, trx, grant, orderedScopes(asked));
    })
    .catch((error: unknown) => {
      if (error instanceof Undo) return error.refusal;
      throw error;
    });
  return answer(context, exchanged);
}

/** Thrown inside an exchange's transaction to roll it back and answer with the refusal. */
class Undo extends Error {
  readonly refusal: Refusal;
  constructor(refusal: Refusal) {
    super(refusal.description);
    this.refusal = refusal;
  }
}
