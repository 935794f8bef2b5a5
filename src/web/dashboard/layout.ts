import type { SignedIn } from '../../accounts/web-session.ts';
import { type Html, html } from '../kit/html.ts';
import { page } from '../kit/page.ts';

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
  body: Html;
};

/**
 * A dashboard page: the navigation (the current section marked), who is signed in with a sign-out
 * button, a sandbox banner when the money is fake, then the page. Server-rendered; works without
 * script.
 */
export function dashboardPage(view: DashboardView): Html {
  const current = SECTIONS.find((s) => s.id === view.section)!;
  const heading = view.heading ?? current.label;
  const nav = SECTIONS.map((s) => html`<li><a href="${s.path}"${s.id === view.section ? html` aria-current="page"` : ''}>${s.label}</a></li>`);
  return page(
    `${heading} · Till dashboard`,
    html`<header class="dashboard-header"><p class="brand"><a href="/dashboard">Till</a></p>
<nav aria-label="Dashboard"><ul>${nav}</ul></nav>
<form method="post" action="/sign-out" class="sign-out"><input type="hidden" name="csrf" value="${view.signedIn.csrfToken}"><span class="note">${view.signedIn.user.email}</span> <button type="submit" class="secondary">Sign out</button></form></header>
<main>${view.mode === 'sandbox' ? html`<p class="sandbox-banner">Sandbox: the money here is fake.</p>` : ''}
<h1>${heading}</h1>
${view.notice ? html`<p role="status" class="done">${view.notice}</p>` : ''}${view.problem ? html`<p role="alert" class="problem">${view.problem}</p>` : ''}
${view.body}</main>`,
  );
}
