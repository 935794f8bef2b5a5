/**
 * The one table of what each role of a merchant's team may do. The dashboard's every route names
 * the permission it needs (web/dashboard/page-route.ts), the CLI sets roles, the coding agents'
 * consent asks for `agents`; nothing else decides who may do what.
 */
export const ROLES = ['owner', 'admin', 'developer', 'viewer'] as const;
export type Role = (typeof ROLES)[number];

export const isRole = (value: unknown): value is Role => typeof value === 'string' && (ROLES as readonly string[]).includes(value);

/** What a role may do, each in the words of the refusal ("Your role cannot …"). */
export const PERMISSIONS = {
  view: 'see the dashboard',
  account: 'manage your own account',
  business: 'change the business details, accepted chains and brand',
  wallet: 'change the payout wallet',
  keys: 'manage API keys and client credentials',
  webhooks: 'manage webhooks',
  links: 'manage payment links',
  refunds: 'refund payments',
  agents: 'authorize or revoke coding agents',
  team: 'manage the team',
  activity: 'see the activity log',
} as const;
export type Permission = keyof typeof PERMISSIONS;

/** The table: each role and what it may do. Owners and admins alike, but only an owner makes, changes or removes an owner. */
export const ROLE_PERMISSIONS: Record<Role, readonly Permission[]> = {
  owner: ['view', 'account', 'business', 'wallet', 'keys', 'webhooks', 'links', 'refunds', 'agents', 'team', 'activity'],
  admin: ['view', 'account', 'business', 'wallet', 'keys', 'webhooks', 'links', 'refunds', 'agents', 'team', 'activity'],
  developer: ['view', 'account', 'keys', 'webhooks', 'links', 'agents'],
  viewer: ['view', 'account'],
};

export const ROLE_LABELS: Record<Role, string> = { owner: 'Owner', admin: 'Admin', developer: 'Developer', viewer: 'Viewer' };

export const ROLE_DESCRIPTIONS: Record<Role, string> = {
  owner: 'Everything, including the payout wallet and the team; only owners make or remove owners.',
  admin: 'Everything but making, changing or removing owners.',
  developer: 'API keys, webhooks, payment links and coding agents; no payout wallet, refunds or team.',
  viewer: 'Sees every page; changes nothing but their own account.',
};

export const can = (role: Role, permission: Permission): boolean => ROLE_PERMISSIONS[role].includes(permission);

/** Whether `actor` may give `target` (a member's current role, or none for an invitation) the role `to`, or remove it. */
export function mayAssign(actor: Role, from: Role | undefined, to: Role | undefined): boolean {
  if (!can(actor, 'team')) return false;
  if (actor === 'owner') return true;
  return from !== 'owner' && to !== 'owner';
}
