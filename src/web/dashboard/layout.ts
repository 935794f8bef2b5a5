import type { SignedIn } from '../../accounts/web-session.ts';
import { escapeHtml, page } from '../../http/html.ts';

/** The dashboard's sections, in the order of its navigation. */
export const SECTIONS = [
  { id: 'overview', path: '/dashboard', label: 'Overview' },
  { id: 'settings', path: '/dashboard/settings', label: 'Settings' },
  { id: 'get-paid', path: '/dashboard/get-paid', label: 'Get paid' },
  { id: 'links', path: '/dashboard/links', label: 'Payment links' },
  { id: 'orders', path: '/dashboard/orders', label: 'Orders' },
  { id: 'notifications', path: '/dashboard/notifications', label: 'Notifications' },
  { id: 'developers', path: '/dashboard/developers', label: 'Developers' },
  { id: 'account', path: '/dashboard/account', label: 'Account' },
] as const;

export type SectionId = (typeof SECTIONS)[number]['id'];

export type DashboardView = {
  signedIn: SignedIn;
  section: SectionId;
  /** The page's own heading (the section's label unless given). */
  heading?: string;
  /** A confirmation to show above the page (`role="status"`). */
  notice?: string;
  /** A refusal to show above the page (`role="alert"`). */
  problem?: string;
  mode: 'sandbox' | 'live';
  body: string;
};

/**
 * A dashboard page: the navigation (the current section marked), who is signed in with a sign-out
 * button, a sandbox banner when the money is fake, then the page. Server-rendered; works without
 * script.
 */
export function dashboardPage(view: DashboardView): string {
  const current = SECTIONS.find((s) => s.id === view.section)!;
  const heading = view.heading ?? current.label;
  const nav = SECTIONS.map((s) => `<li><a href="${s.path}"${s.id === view.section ? ' aria-current="page"' : ''}>${escapeHtml(s.label)}</a></li>`).join('');
  return page(
    `${heading} · Till dashboard`,
    `<header class="dashboard-header"><p class="brand"><a href="/dashboard">Till</a></p>
<nav aria-label="Dashboard"><ul>${nav}</ul></nav>
<form method="post" action="/sign-out" class="sign-out"><input type="hidden" name="csrf" value="${escapeHtml(view.signedIn.csrfToken)}"><span class="note">${escapeHtml(view.signedIn.user.email)}</span> <button type="submit" class="secondary">Sign out</button></form></header>
<main>${view.mode === 'sandbox' ? '<p class="sandbox-banner">Sandbox: the money here is fake.</p>' : ''}
<h1>${escapeHtml(heading)}</h1>
${view.notice ? `<p role="status" class="done">${escapeHtml(view.notice)}</p>` : ''}${view.problem ? `<p role="alert" class="problem">${escapeHtml(view.problem)}</p>` : ''}
${view.body}</main>`,
  );
}
