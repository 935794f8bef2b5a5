/**
 * The scopes a restricted API key (or a client-credentials token asked with `scope`) can be given, one per kind of payment-API request, named as the
 * coding agents' scopes (oauth/scopes.ts) where they mean the same thing. Every API route names the
 * one it needs (its RouteDoc's `scope`); a full key (no scopes) may use them all.
 */
export const API_KEY_SCOPES = [
  { scope: 'sessions:write', line: 'Create and update payment sessions' },
  { scope: 'sessions:read', line: 'Read payment sessions and list them' },
  { scope: 'events:read', line: 'Read webhook events and their deliveries' },
  { scope: 'webhooks:write', line: 'Send test webhooks and redeliver events' },
  { scope: 'refunds:read', line: 'Read refunds and list them' },
  { scope: 'refunds:write', line: 'Prepare and make refunds from the payout wallet' },
] as const;

export type ApiKeyScope = (typeof API_KEY_SCOPES)[number]['scope'];

export const API_KEY_SCOPE_NAMES: readonly ApiKeyScope[] = API_KEY_SCOPES.map((s) => s.scope);

export const isApiKeyScope = (value: string): value is ApiKeyScope => (API_KEY_SCOPE_NAMES as readonly string[]).includes(value);

/**
 * The scopes of a list as given (a CLI's `a,b`, a form's ticked boxes, a tool's array), in the
 * catalogue's order and without repeats; the first unknown one when there is one.
 */
export function parseApiKeyScopes(given: readonly string[]): { scopes: ApiKeyScope[] } | { unknown: string } {
  const names = given.map((name) => name.trim()).filter((name) => name !== '');
  const unknown = names.find((name) => !isApiKeyScope(name));
  if (unknown !== undefined) return { unknown };
  return { scopes: API_KEY_SCOPE_NAMES.filter((scope) => names.includes(scope)) };
}

/** Stored as space-separated text; null is a full key. */
export const storedScopes = (scopes: readonly ApiKeyScope[] | undefined): string | null => (scopes && scopes.length > 0 ? scopes.join(' ') : null);

export const scopesOfStored = (stored: string | null): ApiKeyScope[] | undefined => (stored === null ? undefined : stored.split(' ').filter(isApiKeyScope));
