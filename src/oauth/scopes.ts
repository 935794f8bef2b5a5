import { API_KEY_SCOPE_NAMES } from '../common/api-key-scopes.ts';
/**
 * Every scope a coding agent can be granted (spec 5.3), with the line the consent screen shows.
 * The first two are granted on first authorization; the others are opt-in (elevated): never
 * pre-ticked, even when requested.
 */
export const SCOPES = [
  { scope: 'settings:read', elevated: false, line: 'Read your payment settings (never your payout wallet address) and the quickstart' },
  { scope: 'orders:read', elevated: false, line: 'Read your paid orders and their public receipts' },
  { scope: 'sessions:write', elevated: true, line: 'Create payment links on your account, including links paying their own destination address' },
  { scope: 'keys:read', elevated: true, line: 'List your API keys, masked to their last four characters' },
  { scope: 'keys:write', elevated: true, line: 'Create new API keys' },
  { scope: 'refunds:read', elevated: true, line: 'Read your refunds' },
  {
    scope: 'refunds:write',
    elevated: true,
    line: 'Refund your payments from your payout wallet, once your wallet has signed each refund, and only within the limits you set for this agent under Developers (none until you set them)',
  },
] as const;

export type Scope = (typeof SCOPES)[number]['scope'];

/** What the protected resource metadata advertises (spec E6 shows exactly these). */
export const DEFAULT_SCOPES: Scope[] = SCOPES.filter((s) => !s.elevated).map((s) => s.scope);

/**
 * The scopes a client-credentials token of the payment API may be narrowed to (`scope` at the token
 * endpoint): those of a restricted API key, checked the same way against the route's scope. A token
 * asked without `scope`, like a full API key, may do everything the payment API does.
 */
export const PAYMENT_API_SCOPES = API_KEY_SCOPE_NAMES;
