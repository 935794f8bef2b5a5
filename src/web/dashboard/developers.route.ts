import type { FastifyInstance, FastifyReply } from 'fastify';
import { can } from '../../accounts/roles.ts';
import type { AppContext } from '../../context.ts';
import { formFields } from '../../http/forms.ts';
import { AUDIT_OUTCOMES, type AuditOutcome, searchToolCalls, type ToolCallCursor, type ToolCallFilter } from '../../mcp/audit.ts';
import { withActivity } from '../../merchants/events.ts';
import { parseDecimalAmount } from '../../money/decimal.ts';
import { formatUsdc, USDC_DECIMALS } from '../../money/usdc.ts';
import { type Grant, grantClientNames, listGrants, revokeGrant, setRefundLimits } from '../../oauth/grants.ts';
import { actorOf } from '../kit/actor.ts';
import { type Html, html, joinHtml } from '../kit/html.ts';
import { HTML_RESPONSE, sendPage } from '../kit/page.ts';
import { type DashboardUser, dashboardPage } from './layout.ts';
import { addDashboardRoute } from './page-route.ts';
import { csrfInput, cursorPager, FILTER_REFUSED, moment, shortened } from './views.ts';

export const DEVELOPERS_PATH = '/dashboard/developers';
const AUDIT_PAGE_SIZE = 50;
const OUTCOME_LABELS: Record<AuditOutcome, string> = { ok: 'Done', refused: 'Refused', failed: 'Failed' };

/** An agent's refund limits in words. */
function refundLimitsText(grant: Grant): string {
  const { perRefund, perDay } = grant.refundLimits;
  if (perRefund === null || perDay === null) return 'No limits set: may not refund';
  if (perRefund === 0n || perDay === 0n) return 'Limit 0: may not refund';
  return `Up to ${formatUsdc(perRefund)} USDC a refund, ${formatUsdc(perDay)} USDC in 24 hours`;
}

function grantRow(grant: Grant, csrfToken: string, mayRevoke: boolean): Html {
  return html`<tr>
<td data-label="Agent"><strong>${grant.clientName}</strong><br><code>${grant.clientId}</code></td>
<td data-label="May"><ul class="scope-list">${grant.scopes.map((scope) => html`<li><code>${scope}</code></li>`)}</ul></td>
<td data-label="Refunds">${refundLimitsText(grant)}</td>
<td data-label="Authorized">${moment(grant.createdAt)}</td>
<td data-label="Last used">${moment(grant.lastUsedAt)}</td>
<td>${mayRevoke ? html`<form method="post" action="${DEVELOPERS_PATH}/agents/${encodeURIComponent(grant.id)}/revoke">${csrfInput(csrfToken)}<button type="submit" class="danger" aria-label="Revoke ${grant.clientName}">Revoke</button></form>` : ''}</td>
</tr>`;
}

function agentsSection(grants: Grant[], csrfToken: string, mayRevoke: boolean): Html {
  return html`<h2 id="agents">Authorized coding agents</h2>
${
  grants.length
    ? html`<p>These agents may use your Till account, each with the scopes listed. Revoking one ends its access at once: its next call is refused, and it must ask you again to get it back.</p>
<table class="cards grants"><thead><tr><th scope="col">Agent</th><th scope="col">May</th><th scope="col">Refunds</th><th scope="col">Authorized</th><th scope="col">Last used</th><th scope="col">Access</th></tr></thead>
<tbody>
${joinHtml(
  grants.map((grant) => grantRow(grant, csrfToken, mayRevoke)),
  html`\n`,
)}
</tbody></table>`
    : html`<p>No coding agent may use your account. An agent asks for access by sending you to a consent screen.</p>`
}`;
}

/** The refund limits form as posted and what was wrong with it, to show it again. */
type LimitsState = { grantId: string; perRefund: string; perDay: string; invalid: 'perRefund' | 'perDay' };

/** The limits a merchant sets on each agent's refunds; no tool call can change them. */
function refundLimitsSection(grants: Grant[], csrfToken: string, posted: LimitsState | undefined): Html {
  if (!grants.length) return html``;
  const shown = (limit: bigint | null) => (limit === null ? '' : formatUsdc(limit));
  const forms = grants.map((grant) => {
    const mine = posted?.grantId === grant.id ? posted : undefined;
    const aria = (field: LimitsState['invalid']) => (mine?.invalid === field ? html` aria-invalid="true"` : '');
    const id = (field: string) => `limit-${grant.id}-${field}`;
    return html`<form method="post" action="${DEVELOPERS_PATH}/agents/${encodeURIComponent(grant.id)}/refund-limits" class="refund-limits">${csrfInput(csrfToken)}
<fieldset><legend>${grant.clientName}</legend>
<p><label for="${id('per-refund')}">Per refund (USDC)</label><input id="${id('per-refund')}" name="perRefund" inputmode="decimal" autocomplete="off" value="${mine?.perRefund ?? shown(grant.refundLimits.perRefund)}"${aria('perRefund')}></p>
<p><label for="${id('per-day')}">Per 24 hours (USDC)</label><input id="${id('per-day')}" name="perDay" inputmode="decimal" autocomplete="off" value="${mine?.perDay ?? shown(grant.refundLimits.perDay)}"${aria('perDay')}></p>
<p class="actions"><button type="submit">Save limits</button></p></fieldset></form>`;
  });
  return html`<h2 id="refund-limits">Refund limits</h2>
<p>A coding agent with <code>refunds:write</code> may refund your payments only within the limits you set for it here: the most one refund gives back, and the most its refunds give back in any 24 hours (refunds that failed do not count). Each refund is still signed by your payout wallet. With no limits set, or a limit of 0, the agent may not refund at all. Leave both fields empty to remove the limits. No tool call can change them.</p>
${joinHtml(forms, html`\n`)}`;
}

/** The limits a form post asks for (null: remove them), or the field it gets wrong and why. */
function readLimits(
  fields: Record<string, string | undefined>,
): { limits: { perRefund: bigint; perDay: bigint } | null } | { invalid: LimitsState['invalid']; problem: string } {
  const perRefund = (fields.perRefund ?? '').trim();
  const perDay = (fields.perDay ?? '').trim();
  if (perRefund === '' && perDay === '') return { limits: null };
  const amount = (text: string, field: LimitsState['invalid'], label: string): { value: bigint } | { invalid: LimitsState['invalid']; problem: string } => {
    if (text === '') return { invalid: field, problem: `${label} is required when the other limit is set (leave both empty to remove the limits)` };
    const parsed = parseDecimalAmount(text, USDC_DECIMALS, { allowZero: true });
    return parsed.ok ? { value: parsed.minor } : { invalid: field, problem: `${label} ${parsed.reason}: a USDC amount with at most 6 decimals, 0 or more` };
  };
  const one = amount(perRefund, 'perRefund', 'Per refund');
  if ('invalid' in one) return one;
  const day = amount(perDay, 'perDay', 'Per 24 hours');
  if ('invalid' in day) return day;
  return { limits: { perRefund: one.value, perDay: day.value } };
}

type AuditForm = { grant: string; tool: string; outcome: string };
type ParsedAudit = { filter: ToolCallFilter; after: ToolCallCursor | undefined; form: AuditForm; problems: { field: string; text: string }[] };

export function parseAuditQuery(query: Record<string, unknown>): ParsedAudit {
  const text = (name: string) => (typeof query[name] === 'string' ? (query[name] as string).trim() : '');
  const form: AuditForm = { grant: text('grant'), tool: text('tool'), outcome: text('outcome') };
  const problems: ParsedAudit['problems'] = [];
  const filter: ToolCallFilter = {};
  if (form.grant !== '') {
    if (/^[A-Za-z0-9_-]{1,64}$/.test(form.grant)) filter.grantId = form.grant;
    else problems.push({ field: 'grant', text: 'Agent must be one of your coding agents' });
  }
  if (form.tool !== '') {
    if (/^[a-z0-9_]{1,100}$/.test(form.tool)) filter.tool = form.tool;
    else problems.push({ field: 'tool', text: 'Tool must be a tool name: lower-case letters, digits and _' });
  }
  if (form.outcome !== '') {
    if ((AUDIT_OUTCOMES as string[]).includes(form.outcome)) filter.outcome = form.outcome as AuditOutcome;
    else problems.push({ field: 'outcome', text: 'Outcome must be Done, Refused or Failed' });
  }
  let after: ToolCallCursor | undefined;
  const afterText = text('after');
  if (afterText !== '') {
    const match = /^(\d{1,16})\.([A-Za-z0-9_-]{1,64})$/.exec(afterText);
    if (match) after = { createdAt: Number(match[1]), id: match[2]! };
    else problems.push({ field: 'after', text: 'Page is not a page of this log; start again from the newest' });
  }
  return { filter, after, form, problems };
}

async function auditSection(context: AppContext, merchantId: string, grants: Grant[], parsed: ParsedAudit): Promise<Html> {
  const invalid = new Set(parsed.problems.map((p) => p.field));
  const slice = parsed.problems.length
    ? { calls: [], next: undefined }
    : await searchToolCalls(context.db, merchantId, parsed.filter, { after: parsed.after, size: AUDIT_PAGE_SIZE });
  const names = new Map(grants.map((grant) => [grant.id, grant.clientName]));
  // A revoked agent's calls keep its name.
  const revokedNames = await grantClientNames(
    context.db,
    merchantId,
    slice.calls.map((call) => call.grantId).filter((id) => !names.has(id)),
  );
  const aria = (field: string) => (invalid.has(field) ? html` aria-invalid="true"` : '');
  const selected = (value: string, current: string) => (value === current ? html` selected` : '');
  const grantOptions = grants.map((grant) => html`<option value="${grant.id}"${selected(grant.id, parsed.form.grant)}>${grant.clientName}</option>`);
  const unknownGrant =
    parsed.form.grant !== '' && !names.has(parsed.form.grant) ? html`<option value="${parsed.form.grant}" selected>Revoked agent</option>` : '';
  const form = html`<form method="get" action="${DEVELOPERS_PATH}#audit" class="filters" role="search" aria-label="Filter the tool calls">
<p><label for="a-grant">Agent</label><select id="a-grant" name="grant"${aria('grant')}><option value="">All</option>${grantOptions}${unknownGrant}</select></p>
<p><label for="a-tool">Tool</label><input id="a-tool" name="tool" value="${parsed.form.tool}" autocomplete="off"${aria('tool')}></p>
<p><label for="a-outcome">Outcome</label><select id="a-outcome" name="outcome"${aria('outcome')}><option value="">All</option>${AUDIT_OUTCOMES.map((o) => html`<option value="${o}"${selected(o, parsed.form.outcome)}>${OUTCOME_LABELS[o]}</option>`)}</select></p>
<p class="actions"><button type="submit">Filter</button> <a href="${DEVELOPERS_PATH}#audit">Clear</a></p></form>`;
  const rows = joinHtml(
    slice.calls.map(
      (call) => html`<tr>
<td data-label="Time">${moment(call.createdAt)}</td>
<td data-label="Agent">${names.has(call.grantId) ? names.get(call.grantId) : html`<span class="note">Revoked:</span> ${revokedNames.get(call.grantId) ?? ''}<br><code class="id">${call.clientId}</code>`}</td>
<td data-label="Tool" class="nowrap"><code>${call.tool}</code></td>
<td data-label="Outcome">${OUTCOME_LABELS[call.outcome as AuditOutcome] ?? call.outcome}${call.reason ? html`<br><span class="note">${call.reason}</span>` : ''}</td>
<td data-label="Arguments (SHA-256)" class="nowrap">${shortened(call.argumentsSha256, 12, 4)}</td>
</tr>`,
    ),
    html`\n`,
  );
  const filtered = Object.values(parsed.form).some((value) => value !== '');
  const list = slice.calls.length
    ? html`<div class="table-scroll" role="region" aria-label="Tool calls" tabindex="0"><table class="cards audit"><thead><tr><th scope="col">Time</th><th scope="col">Agent</th><th scope="col">Tool</th><th scope="col">Outcome</th><th scope="col">Arguments (SHA-256)</th></tr></thead><tbody>
${rows}
</tbody></table></div>`
    : html`<p>${parsed.problems.length ? 'Fix the filter to see the calls.' : filtered || parsed.after ? 'No call matches this filter.' : 'No tool call yet.'}</p>`;
  const pager = cursorPager({
    path: DEVELOPERS_PATH,
    filter: parsed.form,
    paged: parsed.after !== undefined,
    next: slice.next && `${slice.next.createdAt}.${slice.next.id}`,
    older: 'Older calls',
    label: 'Pages of tool calls',
    fragment: 'audit',
  });
  return html`<h2 id="audit">Tool calls</h2>
<p>Every call your coding agents made through MCP, refused ones included. Arguments are never kept, only their digest.</p>
${form}${list}${pager}`;
}

async function developersPage(context: AppContext, signedIn: DashboardUser, query: Record<string, unknown>, posted?: LimitsState & { problem: string }) {
  const merchantId = signedIn.user.merchantId;
  const grants = await listGrants(context.db, merchantId, signedIn.modes.mode);
  const asked = parseAuditQuery(query);
  // The calls of the mode the dashboard shows, as its agents are.
  const parsed = { ...asked, filter: { ...asked.filter, mode: signedIn.modes.mode } };
  const problem = [...parsed.problems.map((p) => `${p.text}.`), ...(posted ? [`${posted.problem}.`] : [])].join(' ');
  const notice = query.revoked === '1' ? 'Access revoked. The agent’s next call is refused.' : query.limits === '1' ? 'Refund limits saved.' : undefined;
  return {
    status: problem ? 400 : 200,
    page: dashboardPage({
      signedIn,
      section: 'developers',
      ...(notice ? { notice } : {}),
      ...(problem ? { problem } : {}),
      body: html`${agentsSection(grants, signedIn.csrfToken, can(signedIn.user.role, 'agents'))}\n${can(signedIn.user.role, 'refunds') ? refundLimitsSection(grants, signedIn.csrfToken, posted) : ''}\n${await auditSection(context, merchantId, grants, parsed)}`,
    }),
  };
}

/** Developers: the authorized coding agents (revoke) and the audit log of their MCP tool calls. */
export function registerDevelopers(app: FastifyInstance, context: AppContext): void {
  addDashboardRoute(
    app,
    context,
    {
      method: 'GET',
      url: DEVELOPERS_PATH,
      permission: 'view',
      summary:
        'The signed-in merchant’s authorized coding agents, and the audit log of their MCP tool calls (filtered by agent, tool, outcome; paged by cursor)',
      responses: { 400: FILTER_REFUSED },
    },
    async (signedIn, request, reply) => {
      const { status, page } = await developersPage(context, signedIn, request.query as Record<string, unknown>);
      return sendPage(reply, status, page);
    },
  );

  addDashboardRoute(
    app,
    context,
    {
      method: 'POST',
      url: `${DEVELOPERS_PATH}/agents/{grantId}/refund-limits`,
      // The limits say how much an agent may refund: set only by who may refund.
      permission: 'refunds',
      summary: 'Sets the limits of one coding agent’s refunds: per refund and per 24 hours, in USDC (form post with the session CSRF token)',
      description:
        'Both fields empty remove the limits (the agent may then not refund); 0 refuses every refund. Only a grant of the signed-in user’s merchant; no MCP tool can change them.',
      responses: { 303: { description: 'Saved: back to the page, which says so' }, 400: HTML_RESPONSE, 403: HTML_RESPONSE, 404: HTML_RESPONSE },
    },
    async (signedIn, request, reply) => {
      const { grantId } = request.params as { grantId: string };
      const fields = formFields(request);
      const read = readLimits(fields);
      if ('invalid' in read) {
        const posted = { grantId, perRefund: fields.perRefund ?? '', perDay: fields.perDay ?? '', invalid: read.invalid, problem: read.problem };
        const { page } = await developersPage(context, signedIn, {}, posted);
        return sendPage(reply, 400, page);
      }
      if (!(await setRefundLimits(context.db, grantId, signedIn.user.merchantId, read.limits, context.now()))) return noSuchAgent(reply, signedIn);
      return reply.redirect(`${DEVELOPERS_PATH}?limits=1#refund-limits`, 303);
    },
  );

  addDashboardRoute(
    app,
    context,
    {
      method: 'POST',
      url: `${DEVELOPERS_PATH}/agents/{grantId}/revoke`,
      permission: 'agents',
      summary: 'Revokes one of the signed-in merchant’s coding agents (form post with the session CSRF token)',
      description: 'Its refresh tokens stop working, and its access tokens are refused at their next call. Only a grant of the signed-in user’s merchant.',
      responses: { 303: { description: 'Revoked: back to the page, which says so' }, 403: HTML_RESPONSE, 404: HTML_RESPONSE },
    },
    async (signedIn, request, reply) => {
      const { grantId } = request.params as { grantId: string };
      const revoked = await withActivity(
        context.db,
        signedIn.user.merchantId,
        actorOf(signedIn.user, request),
        (trx) => revokeGrant(trx, grantId, 'merchant', context.now(), signedIn.user.merchantId),
        (yes) => (yes ? { type: 'agent_revoked', mode: signedIn.modes.mode, detail: { grant: grantId } } : undefined),
        context.now(),
      );
      if (!revoked) return noSuchAgent(reply, signedIn);
      return reply.redirect(`${DEVELOPERS_PATH}?revoked=1`, 303);
    },
  );
}

const noSuchAgent = (reply: FastifyReply, signedIn: DashboardUser) =>
  sendPage(
    reply,
    404,
    dashboardPage({
      signedIn,
      section: 'developers',
      heading: 'No such coding agent',
      body: html`<p>It was already revoked, or it is not one of your account’s.</p><p><a href="${DEVELOPERS_PATH}">Back to Developers</a></p>`,
    }),
  );
