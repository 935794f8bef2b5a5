import * as client from 'openid-client';
import type { Config } from '../config.ts';

export type UpstreamProvider = { configuration: client.Configuration; redirectUri: string };

const LOOPBACK = new Set(['localhost', '127.0.0.1', '[::1]']);

/** Discovery results per issuer and client, kept for the process's life (an app's, in tests). */
const discovered = new Map<string, Promise<client.Configuration>>();

/**
 * The upstream OpenID Connect provider, discovered once. Plain http is allowed only for a
 * provider on this machine (local development and tests).
 */
export async function upstreamProvider(config: Pick<Config, 'oidc' | 'baseUrl'>): Promise<UpstreamProvider | undefined> {
  if (!config.oidc) return undefined;
  const { issuer, clientId, clientSecret } = config.oidc;
  const key = `${issuer} ${clientId}`;
  let configuration = discovered.get(key);
  if (!configuration) {
    const url = new URL(issuer);
    const insecure = url.protocol === 'http:' && LOOPBACK.has(url.hostname);
    configuration = client.discovery(url, clientId, clientSecret, undefined, insecure ? { execute: [client.allowInsecureRequests] } : {});
    discovered.set(key, configuration);
    configuration.catch(() => discovered.delete(key));
  }
  return { configuration: await configuration, redirectUri: `${config.baseUrl}/sign-in/oidc/callback` };
}

export type PendingSignIn = { state: string; nonce: string; verifier: string; returnTo: string; expiresAt: number };

/** Where to send the browser, and what to remember (sealed in a cookie) until it comes back. */
export async function beginUpstreamSignIn(provider: UpstreamProvider, returnTo: string, now: number): Promise<{ url: URL; pending: PendingSignIn }> {
  const verifier = client.randomPKCECodeVerifier();
  const pending = { state: client.randomState(), nonce: client.randomNonce(), verifier, returnTo, expiresAt: now + 10 * 60_000 };
  const url = client.buildAuthorizationUrl(provider.configuration, {
    redirect_uri: provider.redirectUri,
    scope: 'openid email',
    code_challenge: await client.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    state: pending.state,
    nonce: pending.nonce,
  });
  return { url, pending };
}

/** The verified email the provider vouches for, after checking state, nonce and PKCE; undefined when it vouches for none. */
export async function finishUpstreamSignIn(provider: UpstreamProvider, callbackUrl: URL, pending: PendingSignIn): Promise<string | undefined> {
  const tokens = await client.authorizationCodeGrant(provider.configuration, callbackUrl, {
    pkceCodeVerifier: pending.verifier,
    expectedState: pending.state,
    expectedNonce: pending.nonce,
    idTokenExpected: true,
  });
  const idToken = tokens.claims();
  if (!idToken) return undefined;
  // Some providers put the email in the ID token, others only at the userinfo endpoint.
  const claims = typeof idToken.email === 'string' ? idToken : await client.fetchUserInfo(provider.configuration, tokens.access_token, idToken.sub);
  if (claims.email_verified !== true || typeof claims.email !== 'string') return undefined;
  return claims.email;
}
