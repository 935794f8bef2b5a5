// A coding agent's side of OAuth as both official MCP client SDKs keep it (their OAuthClientProvider),
// for tests that drive the SDKs against the real service.
import assert from 'node:assert/strict';

/** What the agent saw of the MCP endpoint: each answer's status and challenge. */
export type Exchange = { path: string; status: number; challenge: string | null };

/**
 * A coding agent's OAuth state as both SDKs keep it through their OAuthClientProvider: its
 * client_id is the URL of its metadata document, and sending the merchant to the authorization URL
 * means the merchant consents there (`consent`), leaving the callback for finishAuth.
 */
export class AgentAuth {
  authorizationUrls: URL[] = [];
  callback: URL | undefined;
  private stored: { tokens?: Record<string, unknown>; verifier?: string; discovery?: unknown; client?: { client_id: string; issuer?: string } } = {};
  private readonly agent: { clientId: string; redirectUri: string; issuer: string };
  private readonly consent: (authorizationUrl: URL) => Promise<{ callback: URL; consentPage?: string }>;
  constructor(
    agent: { clientId: string; redirectUri: string; issuer: string },
    consent: (authorizationUrl: URL) => Promise<{ callback: URL; consentPage?: string }>,
  ) {
    this.agent = agent;
    this.consent = consent;
  }
  get redirectUrl() {
    return this.agent.redirectUri;
  }
  get clientMetadata() {
    return { client_name: 'SDK agent', redirect_uris: [this.agent.redirectUri], token_endpoint_auth_method: 'none' };
  }
  // The document is on http://127.0.0.1 (TILL_OAUTH_DEV_ALLOW_LOOPBACK_CLIENTS), which the SDKs'
  // `clientMetadataUrl` refuses (https only): the URL is given as the client's information instead.
  clientInformation() {
    return this.stored.client ?? { client_id: this.agent.clientId, issuer: this.agent.issuer };
  }
  saveClientInformation(information: { client_id: string; issuer?: string }) {
    this.stored.client = information;
  }
  tokens() {
    return this.stored.tokens as never;
  }
  saveTokens(tokens: Record<string, unknown>) {
    this.stored.tokens = tokens;
  }
  get grantedScope(): string | undefined {
    return this.stored.tokens?.scope as string | undefined;
  }
  forgetRefreshToken() {
    const { refresh_token: _, ...tokens } = this.stored.tokens ?? {};
    this.stored.tokens = tokens;
  }
  async redirectToAuthorization(authorizationUrl: URL) {
    this.authorizationUrls.push(authorizationUrl);
    const answered = await this.consent(authorizationUrl);
    this.callback = answered.callback;
    if (answered.consentPage !== undefined) this.consentPages.push(answered.consentPage);
  }
  /** The consent pages the merchant answered, oldest first. */
  consentPages: string[] = [];
  saveCodeVerifier(verifier: string) {
    this.stored.verifier = verifier;
  }
  codeVerifier() {
    return this.stored.verifier ?? '';
  }
  saveDiscoveryState(state: unknown) {
    this.stored.discovery = state;
  }
  discoveryState() {
    return this.stored.discovery as never;
  }
  invalidateCredentials(scope: 'all' | 'client' | 'tokens' | 'verifier' | 'discovery') {
    if (scope === 'all' || scope === 'tokens') delete this.stored.tokens;
    if (scope === 'all' || scope === 'client') delete this.stored.client;
    if (scope === 'all' || scope === 'verifier') delete this.stored.verifier;
    if (scope === 'all' || scope === 'discovery') delete this.stored.discovery;
  }
  /** The code of the last consent, for the transport's finishAuth. */
  get code(): string {
    const code = this.callback?.searchParams.get('code');
    assert.ok(code, `no code came back: ${this.callback}`);
    return code;
  }
  requestedScope(index = -1): string | null {
    return this.authorizationUrls.at(index)?.searchParams.get('scope') ?? null;
  }
}

/** fetch that notes every answer of the MCP endpoint and of the token endpoint. */
export function recordingFetch(exchanges: Exchange[]): typeof fetch {
  return async (input, init) => {
    const response = await fetch(input, init);
    const url = new URL(input instanceof Request ? input.url : String(input));
    if (url.pathname === '/mcp' || url.pathname === '/oauth/token')
      exchanges.push({ path: url.pathname, status: response.status, challenge: response.headers.get('www-authenticate') });
    return response;
  };
}
