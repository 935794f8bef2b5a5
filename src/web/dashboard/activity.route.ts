import type { FastifyInstance } from 'fastify';
import { listMembers } from '../../accounts/users.ts';
import { modeLabel } from '../../common/modes.ts';
import type { AppContext } from '../../context.ts';
import { ACTIVITY_TYPES, type ActivityEntry, type ActivityFilter, isActivityType, searchActivity } from '../../merchants/events.ts';
import { type Html, html, joinHtml } from '../kit/html.ts';
import { sendPage } from '../kit/page.ts';
import { toCsvLine } from './csv.ts';
import { type DashboardUser, dashboardPage } from './layout.ts';
import { addDashboardRoute } from './page-route.ts';
import { FILTER_REFUSED, moment } from './views.ts';

export const ACTIVITY_PATH = '/dashboard/activity';
const PAGE_SIZE = 200;
/** The CSV's rows at most: a year of a busy team's changes. */
const CSV_LIMIT = 50_000;
const DAY_MS = 86_400_000;

type ActivityForm = { who: string; what: string; from: string; to: string };
type ParsedActivity = { filter: ActivityFilter; form: ActivityForm; problems: { field: string; text: string }[] };

const DATE = /^\d{4}-\d{2}-\d{2}$/;

/** The page's query: who (a member's id, `agent` or `operator`), what (a kind of change), from and to (dates, UTC, both included). */
export function parseActivityQuery(query: Record<string, unknown>): ParsedActivity {
  const text = (name: string) => (typeof query[name] === 'string' ? (query[name] as string).trim() : '');
  const form: ActivityForm = { who: text('who'), what: text('what'), from: text('from'), to: text('to') };
  const problems: ParsedActivity['problems'] = [];
  const filter: ActivityFilter = {};
  if (form.who !== '') {
    if (/^[A-Za-z0-9_-]{1,64}$/.test(form.who)) filter.who = form.who;
    else problems.push({ field: 'who', text: 'Who must be a member of your team, a coding agent or the operator' });
  }
  if (form.what !== '') {
    if (isActivityType(form.what)) filter.type = form.what;
    else problems.push({ field: 'what', text: 'What must be one of the kinds of change listed' });
  }
  const day = (field: 'from' | 'to') => {
    const value = form[field];
    if (value === '') return undefined;
    const ms = DATE.test(value) ? Date.parse(`${value}T00:00:00Z`) : Number.NaN;
    if (Number.isNaN(ms)) problems.push({ field, text: `${field === 'from' ? 'From' : 'To'} must be a date, like 2026-11-28` });
    return Number.isNaN(ms) ? undefined : ms;
  };
  const from = day('from');
  const to = day('to');
  if (from !== undefined) filter.from = from;
  if (to !== undefined) filter.to = to + DAY_MS;
  if (from !== undefined && to !== undefined && to < from) problems.push({ field: 'to', text: 'To must be on or after From' });
  return { filter, form, problems };
}

const WHO_KIND: Record<ActivityEntry['actor']['kind'], string> = { user: 'Member', agent: 'Coding agent', operator: 'Operator (command line)' };

const whoOf = (entry: ActivityEntry) => (entry.actor.kind === 'operator' ? WHO_KIND.operator : (entry.actor.label ?? WHO_KIND[entry.actor.kind]));

const detailOf = (entry: ActivityEntry) =>
  Object.entries(entry.detail)
    .map(([key, value]) => `${key}: ${value ?? 'none'}`)
    .join(', ');

const fromWhere = (entry: ActivityEntry) => [entry.actor.ip, entry.actor.userAgent].filter(Boolean).join(' · ');

function entryRow(entry: ActivityEntry): Html {
  const where = fromWhere(entry);
  return html`<tr>
<td data-label="Time">${moment(entry.at)}</td>
<td data-label="Who">${whoOf(entry)}${entry.actor.kind === 'agent' ? html`<br><span class="note">Coding agent</span>` : ''}</td>
<td data-label="What"><strong>${ACTIVITY_TYPES[entry.type] ?? entry.type}</strong>${entry.mode ? html` <span class="note">(${modeLabel(entry.mode)})</span>` : ''}<br><span class="note detail">${detailOf(entry)}</span></td>
<td data-label="From" class="from-where">${where ? html`<span class="note">${where}</span>` : html`<span class="note">—</span>`}</td>
</tr>`;
}

async function activityPage(context: AppContext, signedIn: DashboardUser, parsed: ParsedActivity) {
  const merchantId = signedIn.user.merchantId;
  const members = await listMembers(context.db, merchantId);
  const entries = parsed.problems.length ? [] : await searchActivity(context.db, merchantId, { ...parsed.filter, mode: signedIn.modes.mode }, PAGE_SIZE);
  const invalid = new Set(parsed.problems.map((p) => p.field));
  const aria = (field: string) => (invalid.has(field) ? html` aria-invalid="true"` : '');
  const selected = (value: string, current: string) => (value === current ? html` selected` : '');
  const query = new URLSearchParams(Object.entries(parsed.form).filter(([, value]) => value !== ''));
  const form = html`<form method="get" action="${ACTIVITY_PATH}" class="filters" role="search" aria-label="Filter the activity">
<p><label for="f-who">Who</label><select id="f-who" name="who"${aria('who')}><option value="">Anyone</option>${members.map((m) => html`<option value="${m.id}"${selected(m.id, parsed.form.who)}>${m.email}</option>`)}<option value="agent"${selected('agent', parsed.form.who)}>Coding agents</option><option value="operator"${selected('operator', parsed.form.who)}>Operator</option></select></p>
<p><label for="f-what">What</label><select id="f-what" name="what"${aria('what')}><option value="">Any change</option>${Object.entries(ACTIVITY_TYPES).map(([type, label]) => html`<option value="${type}"${selected(type, parsed.form.what)}>${label}</option>`)}</select></p>
<p><label for="f-from">From</label><input id="f-from" name="from" type="date" value="${parsed.form.from}"${aria('from')}></p>
<p><label for="f-to">To</label><input id="f-to" name="to" type="date" value="${parsed.form.to}"${aria('to')}></p>
<p class="actions"><button type="submit">Filter</button> <a href="${ACTIVITY_PATH}">Clear</a></p></form>`;
  const filtered = query.size > 0;
  const list = entries.length
    ? html`<div class="table-scroll" role="region" aria-label="Activity" tabindex="0"><table class="cards activity"><thead><tr><th scope="col">Time</th><th scope="col">Who</th><th scope="col">What</th><th scope="col">From</th></tr></thead><tbody>
${joinHtml(entries.map(entryRow), html`\n`)}
</tbody></table></div>${entries.length === PAGE_SIZE ? html`<p class="note">The newest ${PAGE_SIZE} are shown: narrow the dates, or download the CSV for all of them.</p>` : ''}`
    : html`<p>${parsed.problems.length ? 'Fix the filter to see the activity.' : filtered ? 'No change matches this filter.' : 'No change recorded yet.'}</p>`;
  const problem = parsed.problems.map((p) => `${p.text}.`).join(' ');
  return {
    status: problem ? 400 : 200,
    page: dashboardPage({
      signedIn,
      section: 'activity',
      ...(problem ? { problem } : {}),
      body: html`<p>Every change made by your team, your coding agents and the operator: who, when and from where. Changes of one mode show in that mode; team, brand and sign-in changes show in both.</p>
${form}<p><a href="${ACTIVITY_PATH}.csv${filtered ? `?${query.toString()}` : ''}" download>Download as CSV</a></p>
${list}`,
    }),
  };
}

/** Activity: the merchant's log of changes, filtered by who, what and dates, and its CSV export. Owners and admins. */
export function registerActivity(app: FastifyInstance, context: AppContext): void {
  addDashboardRoute(
    app,
    context,
    {
      method: 'GET',
      url: ACTIVITY_PATH,
      permission: 'activity',
      summary: 'The activity log of the signed-in merchant: who changed what, when and from where, in the mode shown (filters: who, what, from, to)',
      responses: { 400: FILTER_REFUSED },
    },
    async (signedIn, request, reply) => {
      const { status, page } = await activityPage(context, signedIn, parseActivityQuery(request.query as Record<string, unknown>));
      return sendPage(reply, status, page);
    },
  );

  addDashboardRoute(
    app,
    context,
    {
      method: 'GET',
      url: `${ACTIVITY_PATH}.csv`,
      permission: 'activity',
      summary: 'The activity log of a filter (the page’s query string) as CSV, in the mode shown',
      description: 'Cells that a spreadsheet would read as a formula are prefixed with a quote.',
      responses: { 200: { description: 'text/csv' }, 400: FILTER_REFUSED },
    },
    async (signedIn, request, reply) => {
      const parsed = parseActivityQuery(request.query as Record<string, unknown>);
      if (parsed.problems.length) {
        const { status, page } = await activityPage(context, signedIn, parsed);
        return sendPage(reply, status, page);
      }
      const entries = await searchActivity(context.db, signedIn.user.merchantId, { ...parsed.filter, mode: signedIn.modes.mode }, CSV_LIMIT);
      const lines = [
        toCsvLine(['time', 'who', 'actor', 'what', 'mode', 'detail', 'ip', 'user_agent']),
        ...entries.map((entry) =>
          toCsvLine([
            new Date(entry.at).toISOString(),
            whoOf(entry),
            entry.actor.kind,
            entry.type,
            entry.mode ? modeLabel(entry.mode) : 'both',
            detailOf(entry),
            entry.actor.ip ?? '',
            entry.actor.userAgent ?? '',
          ]),
        ),
      ];
      const day = new Date(context.now()).toISOString().slice(0, 10);
      return reply
        .code(200)
        .header('content-type', 'text/csv; charset=utf-8')
        .header('content-disposition', `attachment; filename="activity-${day}.csv"`)
        .header('cache-control', 'no-store')
        .send(lines.join(''));
    },
  );
}
