// The people and sites around a coding agent's OAuth flow, over real HTTP: the agent's Client ID
// Metadata Document, and the merchant's browser signing in and answering the consent screen.
import assert from 'node:assert/strict';
import type { DocumentServer } from './document-server.ts';

/** A coding agent's Client ID Metadata Document, served at /{slug}/client.json; its redirect URI is /{slug}/callback. */
export function serveAgentDocument(site: DocumentServer, slug: string, clientName: string): { clientId: string; redirectUri: string } {
  const redirectUri = `${site.origin}/${slug}/callback`;
  const clientId = site.serveDocument(`/${slug}/client.json`, (url) => ({
    client_id: url,
    client_name: clientName,
    redirect_uris: [redirectUri],
    token_endpoint_auth_method: 'none',
  }));
  return { clientId, redirectUri };
}

/** A person's browser: follows nothing by itself, keeps cookies, posts forms (a repeated field as a list). */
function cookieBrowser(base: string) {
  const cookies = new Map<string, string>();
  return async (path: string, form?: Record<string, string | string[]>) => {
    const body = new URLSearchParams();
    for (const [name, value] of Object.entries(form ?? {})) for (const one of [value].flat()) body.append(name, one);
    const response = await fetch(new URL(path, base), {
      method: form ? 'POST' : 'GET',
      redirect: 'manual',
      headers: { cookie: [...cookies].map(([n, v]) => `${n}=${v}`).join('; '), ...(form ? { 'content-type': 'application/x-www-form-urlencoded' } : {}) },
      ...(form ? { body } : {}),
    });
    for (const line of response.headers.getSetCookie()) {
      const [pair = ''] = line.split(';');
      const [name = '', value = ''] = pair.split('=');
      if (/Max-Age=0/i.test(line)) cookies.delete(name);
      else cookies.set(name, value);
    }
    return { status: response.status, location: response.headers.get('location') ?? '', html: await response.text() };
  };
}

/** The value of a form's hidden field, or '' when the page has none. */
const hiddenField = (html: string, name: string) => new RegExp(`name="${name}" value="([^"]+)"`).exec(html)?.[1] ?? '';

/**
 * The merchant at the authorization endpoint: follows the agent's authorization URL in one browser,
 * signs in when asked, and allows (or, told so, denies) on the consent screen with `scopes` ticked (by default every scope
 * the agent asked for: elevated scopes are never pre-ticked, so they are ticked here explicitly).
 * Returns the consent page, the URL the browser was sent back to (code, state, iss), and whether
 * the merchant had to sign in first.
 */
export function merchantAtConsent(base: string, email: string, password: string) {
  const go = cookieBrowser(base);
  return async (
    authorizationUrl: string | URL,
    scopes?: string[],
    decision: 'allow' | 'deny' = 'allow',
  ): Promise<{ consentPage: string; callback: URL; signedIn: boolean }> => {
    const toConsent = await go(String(authorizationUrl));
    assert.equal(toConsent.status, 303, `the authorization endpoint answered ${toConsent.status}: ${toConsent.html}`);
    let consentPage = await go(toConsent.location);
    const signedIn = consentPage.status === 303;
    if (signedIn) {
      assert.match(consentPage.location, /^\/sign-in\?return_to=/);
      const signInPage = await go(consentPage.location);
      const signedIn = await go('/sign-in', {
        csrf: hiddenField(signInPage.html, 'csrf'),
        return_to: hiddenField(signInPage.html, 'return_to'),
        email,
        password,
      });
      assert.equal(signedIn.location, toConsent.location);
      consentPage = await go(signedIn.location);
    }
    assert.equal(consentPage.status, 200);
    const ticked = scopes ?? (new URL(authorizationUrl).searchParams.get('scope') ?? '').split(' ').filter(Boolean);
    const answered = await go(toConsent.location, { csrf: hiddenField(consentPage.html, 'csrf'), decision, scope: ticked });
    assert.equal(answered.status, 303);
    return { consentPage: consentPage.html, callback: new URL(answered.location), signedIn };
  };
}
