import { can, PERMISSIONS, type Permission, ROLE_LABELS } from '../../accounts/roles.ts';
import type { SignedIn } from '../../accounts/web-session.ts';
import { type Html, html } from '../kit/html.ts';
import type { ModeView } from '../kit/mode.ts';
import { page } from '../kit/page.ts';

/** The dashboard's sections, in the order of its navigation, each shown to the roles with its permission. */
export const SECTIONS = [
  { id: 'overview', path: '/dashboard', label: 'Overview', permission: 'view' },
  { id: 'settings', path: '/dashboard/settings', label: 'Settings', permission: 'view' },
  { id: 'get-paid', path: '/dashboard/get-paid', label: 'Get paid', permission: 'view' },
  { id: 'links', path: '/dashboard/links', label: 'Payment links', permission: 'view' },
  { id: 'orders', path: '/dashboard/orders', label: 'Orders', permission: 'view' },
  { id: 'notifications', path: '/dashboard/notifications', label: 'Notifications', permission: 'view' },
  { id: 'developers', path: '/dashboard/developers', label: 'Developers', permission: 'view' },
  { id: 'team', path: '/dashboard/team', label: 'Team', permission: 'team' },
  { id: 'activity', path: '/dashboard/activity', label: 'Activity', permission: 'activity' },
  { id: 'account', path: '/dashboard/account', label: 'Account', permission: 'account' },
] as const satisfies readonly { id: string; path: string; label: string; permission: Permission }[];

/** A signed-in user of the dashboard, with the mode its pages show (web/kit/mode.ts). */
export type DashboardUser = SignedIn & { modes: ModeView };

export type SectionId = (typeof SECTIONS)[number]['id'];

export type DashboardView = {
  /** Who is signed in, and the mode shown (the switch's state) among the modes the deployment serves. */
  signedIn: DashboardUser;
  section: SectionId;
  /** The page's own heading (the section's label unless given). */
  heading?: string;
  /** A confirmation to show above the page (`role="status"`). */
  notice?: string;
  /** A refusal to show above the page (`role="alert"`). */
  problem?: string;
  body: Html;
};

/**
 * A control (a form) shown only to the roles that may use it; to others, a line saying why it is not
 * there. The route refuses them anyway (page-route.ts): this only spares them a form that cannot work.
 */
export function onlyFor(signedIn: DashboardUser, permission: Permission, control: Html): Html {
  if (can(signedIn.user.role, permission)) return control;
  return html`<p class="note role-note">Your role, ${ROLE_LABELS[signedIn.user.role]}, cannot ${PERMISSIONS[permission]}.</p>`;
}

/** Where the switch posts; it comes back to the section it was used on. */
export const MODE_SWITCH_PATH = '/dashboard/mode';

/**
 * The "Test mode" switch: a form post that flips the mode shown, when the deployment serves both. A
 * deployment serving test only shows it on and disabled (the banner says how live is turned on); one
 * serving live only shows none.
 */
function modeSwitch(view: DashboardView): Html {
  const { mode, served } = view.signedIn.modes;
  if (!served.includes('sandbox')) return html``;
  const testOn = mode === 'sandbox';
  const track = html`<span class="switch-track" aria-hidden="true"></span>`;
  if (!served.includes('live'))
    return html`<p class="mode-switch"><button type="button" class="switch" role="switch" aria-checked="true" disabled aria-describedby="test-mode-banner">${track}Test mode</button></p>`;
  return html`<form method="post" action="${MODE_SWITCH_PATH}" class="mode-switch"><input type="hidden" name="csrf" value="${view.signedIn.csrfToken}"><input type="hidden" name="mode" value="${testOn ? 'live' : 'test'}"><input type="hidden" name="section" value="${view.section}"><button type="submit" class="switch" role="switch" aria-checked="${testOn ? 'true' : 'false'}">${track}Test mode</button></form>`;
}

/** Across the top of every page while test mode is shown. */
function testBanner(view: DashboardView): Html {
  if (view.signedIn.modes.mode !== 'sandbox') return html``;
  const liveOff = view.signedIn.modes.served.includes('live')
    ? ''
    : html` Live payments are not turned on for this service: its operator turns them on with the live settings (see “Going live” in the operations guide).`;
  return html`<p class="test-banner" role="note" id="test-mode-banner"><strong>Test mode</strong> — you are viewing test data; payments use fake money.${liveOff}</p>`;
}

/**
 * A dashboard page: the navigation (the current section marked), the "Test mode" switch, who is
 * signed in with a sign-out button, a banner while test mode is shown, then the page.
 * Server-rendered; works without script.
 */
export function dashboardPage(view: DashboardView): Html {
  const current = SECTIONS.find((s) => s.id === view.section)!;
  const heading = view.heading ?? current.label;
  const nav = SECTIONS.filter((s) => can(view.signedIn.user.role, s.permission)).map(
    (s) => html`<li><a href="${s.path}"${s.id === view.section ? html` aria-current="page"` : ''}>${s.label}</a></li>`,
  );
  return page(
    `${heading} · Till dashboard`,
    html`<header class="dashboard-header"><p class="brand"><a href="/dashboard">Till</a></p>
<nav aria-label="Dashboard"><ul>${nav}</ul></nav>
${modeSwitch(view)}<form method="post" action="/sign-out" class="sign-out"><input type="hidden" name="csrf" value="${view.signedIn.csrfToken}"><span class="note">${view.signedIn.user.email}</span> <button type="submit" class="secondary">Sign out</button></form></header>
<main>${testBanner(view)}
<h1>${heading}</h1>
${view.notice ? html`<p role="status" class="done">${view.notice}</p>` : ''}${view.problem ? html`<p role="alert" class="problem">${view.problem}</p>` : ''}
${view.body}</main>`,
  );
}
