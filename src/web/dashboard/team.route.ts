import type { FastifyInstance, FastifyReply } from 'fastify';
import { type Invitation, InvitationError, inviteMember, listPendingInvitations, revokeInvitation } from '../../accounts/invitations.ts';
import { isRole, mayAssign, ROLE_DESCRIPTIONS, ROLE_LABELS, ROLES, type Role } from '../../accounts/roles.ts';
import { changeRole, LastOwnerError, listMembers, removeMember, type User, UserError } from '../../accounts/users.ts';
import type { AppContext } from '../../context.ts';
import { formFields } from '../../http/forms.ts';
import { accountMailMode } from '../../mail/notices.ts';
import { removeSecretsOfUserGrants } from '../../oauth/grant-secrets.ts';
import { removeGrantsOfUser } from '../../oauth/grants.ts';
import { actorOf } from '../kit/actor.ts';
import { type Html, html, joinHtml } from '../kit/html.ts';
import { HTML_RESPONSE, sendPage } from '../kit/page.ts';
import { STEP_UP_FIELD, stepUpInput, stepUpRefusal } from '../kit/reauth.ts';
import { type FieldProblem, labelledInput } from './form-controls.ts';
import { type DashboardUser, dashboardPage } from './layout.ts';
import { addDashboardRoute } from './page-route.ts';
import { csrfInput, moment } from './views.ts';

export const TEAM_PATH = '/dashboard/team';

const DONE: Record<string, string> = {
  invited: 'Invitation sent. It works once, for 7 days.',
  'invitation-revoked': 'Invitation revoked: its link no longer works.',
  'role-changed': 'Role changed. It applies from the member’s next page.',
  removed: 'Member removed and signed out everywhere.',
};

type TeamView = { notice?: string; problem?: FieldProblem & { form: 'invite' | 'member'; userId?: string }; values?: { email: string; role: string } };

/** The roles `signedIn` may hand out from `from` (a member's current role, or none for an invitation). */
const assignable = (signedIn: DashboardUser, from: Role | undefined) => ROLES.filter((role) => mayAssign(signedIn.user.role, from, role));

function roleSelect(id: string, roles: readonly Role[], selected: string, problem?: boolean): Html {
  return html`<select id="${id}" name="role"${problem ? html` aria-invalid="true" aria-describedby="${id}-problem"` : ''}>${roles.map(
    (role) => html`<option value="${role}"${role === selected ? html` selected` : ''}>${ROLE_LABELS[role]}</option>`,
  )}</select>`;
}

function memberRow(signedIn: DashboardUser, member: User, view: TeamView, now: number): Html {
  const you = member.id === signedIn.user.id;
  const roles = assignable(signedIn, member.role);
  const problem = view.problem?.form === 'member' && view.problem.userId === member.id ? view.problem : undefined;
  const id = `role-${member.id}`;
  const manage = roles.includes(member.role)
    ? html`<form method="post" action="${TEAM_PATH}/members/${member.id}/role" class="inline-form">${csrfInput(signedIn.csrfToken)}<label for="${id}" class="visually-hidden">Role of ${member.email}</label>${roleSelect(id, roles, member.role, !!problem)}${stepUpInput(signedIn, now, id, undefined, TEAM_PATH)} <button type="submit" class="secondary">Change role</button>${problem ? html`<span id="${id}-problem" class="field-problem">Role ${problem.message}.</span>` : ''}</form>
<form method="post" action="${TEAM_PATH}/members/${member.id}/remove" class="inline-form">${csrfInput(signedIn.csrfToken)}<button type="submit" class="danger" aria-label="${you ? 'Leave the team' : 'Remove'} ${member.email}">${you ? 'Leave the team' : 'Remove'}</button></form>`
    : html`<span class="note">Only an owner changes an owner.</span>`;
  return html`<tr>
<td data-label="Member"><strong>${member.email}</strong>${you ? html` <span class="note">(you)</span>` : ''}</td>
<td data-label="Role">${ROLE_LABELS[member.role]}</td>
<td data-label="Since">${moment(member.createdAt)}</td>
<td data-label="Manage">${manage}</td>
</tr>`;
}

function invitationRow(signedIn: DashboardUser, invitation: Invitation): Html {
  return html`<tr>
<td data-label="Address"><strong>${invitation.email}</strong></td>
<td data-label="Role">${ROLE_LABELS[invitation.role]}</td>
<td data-label="Until">${moment(invitation.expiresAt)}</td>
<td data-label="Manage"><form method="post" action="${TEAM_PATH}/invitations/${invitation.id}/revoke">${csrfInput(signedIn.csrfToken)}<button type="submit" class="danger" aria-label="Revoke the invitation of ${invitation.email}">Revoke</button></form></td>
</tr>`;
}

async function teamPage(context: AppContext, signedIn: DashboardUser, view: TeamView): Promise<Html> {
  const merchantId = signedIn.user.merchantId;
  const members = await listMembers(context.db, merchantId);
  const invitations = await listPendingInvitations(context.db, merchantId, context.now());
  const inviteProblem = view.problem?.form === 'invite' ? view.problem : undefined;
  const roles = assignable(signedIn, undefined);
  const roleProblem = inviteProblem?.field === 'role';
  const roleList = html`<dl class="role-list">${ROLES.map((role) => html`<dt>${ROLE_LABELS[role]}</dt><dd>${ROLE_DESCRIPTIONS[role]}</dd>`)}</dl>`;
  const body = html`<section aria-labelledby="members-heading"><h2 id="members-heading">Members</h2>
<div class="table-scroll" role="region" aria-label="Members" tabindex="0"><table class="cards team"><thead><tr><th scope="col">Member</th><th scope="col">Role</th><th scope="col">Since</th><th scope="col">Manage</th></tr></thead><tbody>
${joinHtml(
  members.map((member) => memberRow(signedIn, member, view, context.now())),
  html`\n`,
)}
</tbody></table></div>
<p class="note">A business always keeps at least one owner.</p></section>
<section aria-labelledby="invite-heading"><h2 id="invite-heading">Invite a member</h2>
<p>We mail a link that works once, for 7 days; the invitee chooses a password there and signs in with the role you give.</p>
<form method="post" action="${TEAM_PATH}/invitations" class="settings-form">${csrfInput(signedIn.csrfToken)}
${labelledInput({ name: 'email', label: 'Email', type: 'email', value: view.values?.email ?? '', autocomplete: 'off', required: true, attributes: html`maxlength="254"` }, inviteProblem)}
<p class="field"><label for="field-role">Role</label>${roleSelect('field-role', roles, view.values?.role ?? 'viewer', roleProblem)}${roleProblem ? html`<span id="field-role-problem" class="field-problem">Role ${inviteProblem!.message}.</span>` : ''}</p>
<p><button type="submit">Send invitation</button></p></form>
<details><summary>What each role may do</summary>${roleList}</details></section>
<section aria-labelledby="pending-heading"><h2 id="pending-heading">Pending invitations</h2>
${
  invitations.length
    ? html`<div class="table-scroll" role="region" aria-label="Pending invitations" tabindex="0"><table class="cards invitations"><thead><tr><th scope="col">Address</th><th scope="col">Role</th><th scope="col">Until</th><th scope="col">Manage</th></tr></thead><tbody>
${joinHtml(
  invitations.map((invitation) => invitationRow(signedIn, invitation)),
  html`\n`,
)}
</tbody></table></div>`
    : html`<p>No invitation is waiting.</p>`
}</section>`;
  const problemText = view.problem ? `${view.problem.field === 'email' ? 'Email' : 'Role'} ${view.problem.message}.` : undefined;
  return dashboardPage({
    signedIn,
    section: 'team',
    ...(view.notice ? { notice: view.notice } : {}),
    ...(problemText ? { problem: problemText } : {}),
    body,
  });
}

const notFound = (reply: FastifyReply, signedIn: DashboardUser, what: string) =>
  sendPage(
    reply,
    404,
    dashboardPage({
      signedIn,
      section: 'team',
      heading: `No such ${what}`,
      body: html`<p>It is not one of your team’s, or it was already removed.</p><p><a href="${TEAM_PATH}">Back to Team</a></p>`,
    }),
  );

/** Team: members and their roles (change, remove), invitations by email (send, list, revoke). Owners and admins only. */
export function registerTeam(app: FastifyInstance, context: AppContext): void {
  const mailMode = accountMailMode(context.config.modes);
  const answer = async (reply: FastifyReply, signedIn: DashboardUser, status: number, view: TeamView) =>
    sendPage(reply, status, await teamPage(context, signedIn, view));
  const REFUSED = { 400: { description: 'Refused: the page names the field' } };

  addDashboardRoute(
    app,
    context,
    { method: 'GET', url: TEAM_PATH, permission: 'team', summary: 'The team: members with their roles, the invitation form and the pending invitations' },
    async (signedIn, request, reply) => {
      const done = Object.keys(DONE).find((key) => (request.query as Record<string, unknown>)[key] === '1');
      return answer(reply, signedIn, 200, done ? { notice: DONE[done]! } : {});
    },
  );

  addDashboardRoute(
    app,
    context,
    {
      method: 'POST',
      url: `${TEAM_PATH}/invitations`,
      permission: 'team',
      summary: 'Invites a member by email with a role (form post)',
      description:
        'Takes `email`, `role` (owner, admin, developer or viewer; only an owner invites an owner) and `csrf`. Mails a link that works once, for 7 days. Refused for an address that already has a Till user.',
      responses: REFUSED,
    },
    async (signedIn, request, reply) => {
      const fields = formFields(request);
      const values = { email: (fields.email ?? '').trim().slice(0, 254), role: fields.role ?? '' };
      const refuse = (field: 'email' | 'role', message: string) => answer(reply, signedIn, 400, { values, problem: { form: 'invite', field, message } });
      if (!isRole(values.role)) return refuse('role', 'must be one of Owner, Admin, Developer or Viewer');
      if (!mayAssign(signedIn.user.role, undefined, values.role)) return refuse('role', 'Owner can be given by an owner only');
      try {
        await inviteMember(
          context.db,
          { merchantId: signedIn.user.merchantId, email: values.email, role: values.role, actor: actorOf(signedIn.user, request) },
          { now: context.now(), baseUrl: context.config.baseUrl, mailMode },
        );
      } catch (error) {
        if (error instanceof InvitationError && (error.field === 'email' || error.field === 'role')) return refuse(error.field, error.message);
        throw error;
      }
      return reply.redirect(`${TEAM_PATH}?invited=1`, 303);
    },
  );

  addDashboardRoute(
    app,
    context,
    {
      method: 'POST',
      url: `${TEAM_PATH}/invitations/{id}/revoke`,
      permission: 'team',
      summary: 'Revokes a pending invitation: its link stops working (form post)',
      responses: { 404: HTML_RESPONSE },
    },
    async (signedIn, request, reply) => {
      const { id } = request.params as { id: string };
      const revoked = await revokeInvitation(context.db, { merchantId: signedIn.user.merchantId, id, actor: actorOf(signedIn.user, request) }, context.now());
      if (!revoked) return notFound(reply, signedIn, 'invitation');
      return reply.redirect(`${TEAM_PATH}?invitation-revoked=1`, 303);
    },
  );

  addDashboardRoute(
    app,
    context,
    {
      method: 'POST',
      url: `${TEAM_PATH}/members/{userId}/role`,
      permission: 'team',
      summary: 'Gives a member another role (form post)',
      description:
        'Takes `role` and `csrf`. Only an owner makes, changes or removes an owner; the last owner keeps the role (400), even when two changes race.',
      responses: { ...REFUSED, 404: HTML_RESPONSE },
    },
    async (signedIn, request, reply) => {
      const { userId } = request.params as { userId: string };
      const role = formFields(request).role ?? '';
      const refuse = (message: string) => answer(reply, signedIn, 400, { problem: { form: 'member', userId, field: 'role', message } });
      if (!isRole(role)) return refuse('must be one of Owner, Admin, Developer or Viewer');
      const member = (await listMembers(context.db, signedIn.user.merchantId)).find((m) => m.id === userId);
      if (!member) return notFound(reply, signedIn, 'member');
      if (!mayAssign(signedIn.user.role, member.role, role)) return refuse('of an owner, or Owner itself, can be given by an owner only');
      // A role is what a member may do with the merchant's money: a fresh second factor first, for a user with one.
      const stepUp = await stepUpRefusal(context, signedIn, formFields(request)[STEP_UP_FIELD]);
      if (stepUp) return refuse(`was not changed: the second factor ${stepUp}`);
      try {
        await changeRole(context.db, { merchantId: signedIn.user.merchantId, userId, role, actor: actorOf(signedIn.user, request) }, context.now());
      } catch (error) {
        if (error instanceof UserError)
          return refuse(error instanceof LastOwnerError ? 'stays Owner: this is the last owner; make another member an owner first' : error.message);
        throw error;
      }
      return reply.redirect(`${TEAM_PATH}?role-changed=1`, 303);
    },
  );

  addDashboardRoute(
    app,
    context,
    {
      method: 'POST',
      url: `${TEAM_PATH}/members/{userId}/remove`,
      permission: 'team',
      summary: 'Removes a member: signed out everywhere, its coding agents revoked (form post)',
      description: 'Takes `csrf`. The last owner cannot be removed (400).',
      responses: { ...REFUSED, 404: HTML_RESPONSE },
    },
    async (signedIn, request, reply) => {
      const { userId } = request.params as { userId: string };
      const member = (await listMembers(context.db, signedIn.user.merchantId)).find((m) => m.id === userId);
      if (!member) return notFound(reply, signedIn, 'member');
      if (!mayAssign(signedIn.user.role, member.role, undefined))
        return answer(reply, signedIn, 400, { problem: { form: 'member', userId, field: 'role', message: 'of an owner: only an owner removes an owner' } });
      try {
        await removeMember(
          context.db,
          { merchantId: signedIn.user.merchantId, userId, actor: actorOf(signedIn.user, request) },
          async (trx, removed) => {
            await removeSecretsOfUserGrants(trx, removed.id);
            await removeGrantsOfUser(trx, removed.id);
          },
          context.now(),
        );
      } catch (error) {
        if (error instanceof LastOwnerError)
          return answer(reply, signedIn, 400, {
            problem: { form: 'member', userId, field: 'role', message: 'stays: this is the last owner, who cannot be removed' },
          });
        throw error;
      }
      if (userId === signedIn.user.id) return reply.redirect('/sign-in', 303);
      return reply.redirect(`${TEAM_PATH}?removed=1`, 303);
    },
  );
}
