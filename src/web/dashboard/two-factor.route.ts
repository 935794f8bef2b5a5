import type { FastifyInstance, FastifyReply } from 'fastify';
import QRCode from 'qrcode';
import { listPasskeys, registerPasskey, registrationOptions, removePasskey } from '../../accounts/passkeys.ts';
import type { Permission } from '../../accounts/roles.ts';
import { otpauthUri } from '../../accounts/totp.ts';
import { beginTotpEnrolment, confirmTotp, pendingTotpSecret, removeTotp, replaceRecoveryCodes, totpState } from '../../accounts/two-factor.ts';
import { secondFactorGiven } from '../../accounts/user-sessions.ts';
import type { AppContext } from '../../context.ts';
import { formFields } from '../../http/forms.ts';
import { setRequireTwoFactor } from '../../merchants/merchants.ts';
import { type Html, html, joinHtml, trusted } from '../kit/html.ts';
import { sendPage } from '../kit/page.ts';
import { ceremonyAnswer, keepCeremony, passkeyScript, relyingParty, takeCeremony } from '../kit/passkeys.ts';
import { STEP_UP_FIELD, stepUpInput, stepUpRefusal } from '../kit/reauth.ts';
import { csrfInput, labelledInput, utcMinute } from './form-controls.ts';
import { type DashboardUser, dashboardPage } from './layout.ts';
import { addDashboardRoute, type DashboardHandler, type DashboardRouteDoc, TWO_FACTOR_PATH } from './page-route.ts';

/** What the page shows beyond the state: an enrolment under way (its secret), new recovery codes (once). */
type View = { enrolling?: string; recoveryCodes?: string[]; notice?: string; problem?: { field: string; message: string }; status?: number };

const NOTICES: Record<string, string> = {
  removed: 'Authenticator app removed. Sign-in asks for your password only, unless you have a passkey.',
  'passkey-added': 'Passkey added: sign-in can ask for it after your password.',
  'passkey-removed': 'Passkey removed.',
  required: 'Every user of this merchant now signs in with a second factor; those without one are sent to set one up.',
  'not-required': 'A second factor is no longer required of every user.',
};

async function qrCode(uri: string): Promise<Html> {
  const svg = await QRCode.toString(uri, { type: 'svg', margin: 1, errorCorrectionLevel: 'M', color: { dark: '#000000', light: '#ffffff' } });
  // trusted: an SVG of paths only, drawn by the qrcode library (no text of the URI is in the markup).
  return trusted(svg.replace('<svg ', '<svg role="img" aria-labelledby="totp-qr-caption" focusable="false" class="totp-qr" '));
}

/** The secret as people copy it by hand: groups of four. */
const grouped = (secret: string) => secret.replace(/(.{4})/g, '$1 ').trim();

async function twoFactorBody(context: AppContext, signedIn: DashboardUser, view: View): Promise<Html> {
  const csrf = csrfInput(signedIn.csrfToken);
  const state = await totpState(context.db, signedIn.user.id);
  const problemOf = (field: string) => (view.problem?.field === field ? view.problem : undefined);
  const stepUpProblem = problemOf(STEP_UP_FIELD)?.message;

  const codes = view.recoveryCodes
    ? html`<div class="secret" role="region" aria-labelledby="recovery-heading"><h3 id="recovery-heading">Your recovery codes</h3>
<p>Keep them somewhere safe, apart from your phone: each one signs you in once in place of a code. They are shown this once.</p>
<ul class="recovery-codes">${joinHtml(
        view.recoveryCodes.map((code) => html`<li><code>${code}</code></li>`),
        html``,
      )}</ul></div>`
    : '';

  let authenticator: Html;
  if (view.enrolling) {
    const uri = otpauthUri(view.enrolling, 'Till', signedIn.user.email);
    authenticator = html`<ol class="steps"><li>Scan this QR code with your authenticator app (or type the key below).
<figure class="qr">${await qrCode(uri)}<figcaption id="totp-qr-caption">QR code of your Till authenticator key</figcaption></figure>
<p>Key: <code id="totp-secret" class="mono">${grouped(view.enrolling)}</code></p></li>
<li><form method="post" action="${TWO_FACTOR_PATH}/totp/confirm" class="settings-form">${csrf}
${labelledInput({ name: 'code', label: 'Code from the app', hint: 'The 6 digits it shows now.', autocomplete: 'one-time-code', required: true, attributes: html`inputmode="numeric" maxlength="8" class="short mono" spellcheck="false"` }, problemOf('code'))}
<p><button type="submit">Turn on</button></p></form></li></ol>`;
  } else if (state.enrolled) {
    authenticator = html`<p><strong>On.</strong> Sign-in asks for a code of your authenticator app after your password. ${state.recoveryCodesLeft} unused recovery code${state.recoveryCodesLeft === 1 ? '' : 's'} left.</p>
<form method="post" action="${TWO_FACTOR_PATH}/recovery-codes" class="settings-form">${csrf}${stepUpInput(signedIn, context.now(), 'recovery', stepUpProblem)}<p><button type="submit">Make new recovery codes</button></p></form>
<form method="post" action="${TWO_FACTOR_PATH}/totp/remove" class="settings-form">${csrf}${stepUpInput(signedIn, context.now(), 'remove', stepUpProblem)}<p><button type="submit" class="danger">Remove the authenticator app</button></p></form>`;
  } else {
    authenticator = html`<p>Off. With an authenticator app (any app that reads a QR code: 1Password, Google Authenticator, Aegis…), sign-in asks for its code after your password, and so do payout wallet changes, new API keys and authorizing a coding agent.</p>
<form method="post" action="${TWO_FACTOR_PATH}/totp">${csrf}<button type="submit">Set up an authenticator app</button></form>`;
  }

  const passkeys = await listPasskeys(context.db, signedIn.user.id);
  const passkeyRows = joinHtml(
    passkeys.map(
      (
        passkey,
      ) => html`<li><strong>${passkey.name}</strong> <span class="note">added ${utcMinute(passkey.createdAt)}${passkey.lastUsedAt === null ? '' : `, last used ${utcMinute(passkey.lastUsedAt)}`}</span>
<form method="post" action="${TWO_FACTOR_PATH}/passkeys/${encodeURIComponent(passkey.id)}/remove" class="settings-form">${csrf}${stepUpInput(signedIn, context.now(), `remove-${passkey.id.slice(0, 8)}`, stepUpProblem)}<button type="submit" class="danger" aria-label="Remove the passkey ${passkey.name}">Remove</button></form></li>`,
    ),
    html``,
  );
  const passkeySection = html`<section aria-labelledby="passkeys-heading"><h2 id="passkeys-heading">Passkeys</h2>
<p>A passkey (your device's fingerprint or face unlock, or a security key) can stand for the code at sign-in and for sensitive changes.</p>
${passkeys.length ? html`<ul class="passkeys">${passkeyRows}</ul>` : html`<p>No passkey yet.</p>`}
<form method="post" action="${TWO_FACTOR_PATH}/passkeys" data-passkey="register" data-options="${TWO_FACTOR_PATH}/passkeys/options" class="settings-form">${csrf}<input type="hidden" name="response" value="">
${labelledInput({ name: 'name', label: 'Name of the passkey', hint: 'So you can tell it apart: “Laptop”, “Security key”.', value: 'Passkey', required: true, attributes: html`maxlength="60"` }, problemOf('name'))}
<p><button type="submit">Add a passkey</button> <span data-passkey-status role="status"></span></p></form></section>${passkeyScript()}`;

  const required = signedIn.secondFactor.required;
  const canRequire = required || signedIn.secondFactor.enrolled;
  const rule = html`<section aria-labelledby="require-heading"><h2 id="require-heading">For everyone on this merchant</h2>
<p>${required ? 'Every user must sign in with a second factor: a user without one is sent here after signing in.' : 'A second factor is up to each user.'}${canRequire ? '' : ' Set up your own second factor first to require one of everyone.'}</p>
${
  canRequire
    ? html`<form method="post" action="${TWO_FACTOR_PATH}/require" class="settings-form">${csrf}<input type="hidden" name="required" value="${required ? 'no' : 'yes'}">
${required ? '' : stepUpInput(signedIn, context.now(), 'require', stepUpProblem)}
<p><button type="submit"${required ? html` class="danger"` : ''}>${required ? 'Stop requiring a second factor' : 'Require a second factor of every user'}</button></p></form>`
    : ''
}</section>`;

  const mustEnrol =
    required && !signedIn.secondFactor.enrolled
      ? html`<p class="attention" role="alert">Your merchant requires a second factor: set one up to use the dashboard.</p>`
      : '';
  return html`${mustEnrol}${codes}<section aria-labelledby="totp-heading"><h2 id="totp-heading">Authenticator app</h2>${authenticator}</section>
${passkeySection}
${rule}
<p><a href="/dashboard/account">Back to your account</a></p>`;
}

const FIELD_LABELS: Record<string, string> = { code: 'Code from the app', [STEP_UP_FIELD]: 'Two-factor code', required: 'Required', name: 'Passkey' };

async function sendTwoFactor(context: AppContext, reply: FastifyReply, signedIn: DashboardUser, view: View) {
  return sendPage(
    reply,
    view.status ?? 200,
    dashboardPage({
      signedIn,
      section: 'account',
      heading: 'Two-factor sign-in',
      ...(view.notice ? { notice: view.notice } : {}),
      ...(view.problem ? { problem: `${FIELD_LABELS[view.problem.field] ?? view.problem.field} ${view.problem.message}.` } : {}),
      body: await twoFactorBody(context, signedIn, view),
    }),
  );
}

/** Two-factor sign-in on the account page: an authenticator app (with recovery codes) and the merchant's rule. */
export function registerTwoFactor(app: FastifyInstance, context: AppContext): void {
  // A user's own second factors are their account's; the merchant's rule for everyone is the team's.
  const route = (doc: Omit<DashboardRouteDoc, 'permission'> & { permission?: Permission }, handler: DashboardHandler) =>
    addDashboardRoute(app, context, { permission: 'account', ...doc, enrolment: true }, handler);
  const stepUpRefused = (message: string) => ({ status: 400, problem: { field: STEP_UP_FIELD, message } });

  route(
    { method: 'GET', url: TWO_FACTOR_PATH, summary: "The signed-in user's second factors and the merchant's two-factor rule" },
    async (signedIn, request, reply) => {
      const done = (request.query as { done?: unknown }).done;
      const notice = typeof done === 'string' ? NOTICES[done] : undefined;
      return sendTwoFactor(context, reply, signedIn, notice ? { notice } : {});
    },
  );

  route(
    {
      method: 'POST',
      url: `${TWO_FACTOR_PATH}/totp`,
      summary: 'Starts setting up an authenticator app: its key as a QR code and as text',
      responses: { 200: { description: 'The key' } },
    },
    async (signedIn, _request, reply) => {
      const secret = await beginTotpEnrolment(context.db, context.config.secretKey, signedIn.user.id, context.now());
      if (!secret) return sendTwoFactor(context, reply, signedIn, { status: 409, notice: 'An authenticator app is set up already.' });
      return sendTwoFactor(context, reply, signedIn, { enrolling: secret });
    },
  );

  route(
    {
      method: 'POST',
      url: `${TWO_FACTOR_PATH}/totp/confirm`,
      summary: 'Turns the authenticator app on with a code of it; the recovery codes are shown this once',
      responses: { 200: { description: 'On: the recovery codes' }, 400: { description: 'The code is not right: the QR code again' } },
    },
    async (signedIn, request, reply) => {
      const code = formFields(request).code ?? '';
      const now = context.now();
      const recoveryCodes = await confirmTotp(context.db, context.config.secretKey, signedIn.user.id, code, now);
      if (!recoveryCodes) {
        const secret = await pendingTotpSecret(context.db, context.config.secretKey, signedIn.user.id);
        if (!secret) return reply.redirect(TWO_FACTOR_PATH, 303);
        return sendTwoFactor(context, reply, signedIn, {
          status: 400,
          enrolling: secret,
          problem: { field: 'code', message: 'is not right: type the 6 digits the app shows now' },
        });
      }
      await secondFactorGiven(context.db, signedIn.session.idHash, now);
      const fresh = { ...signedIn, secondFactor: { ...signedIn.secondFactor, enrolled: true }, session: { ...signedIn.session, secondFactorAt: now } };
      return sendTwoFactor(context, reply, fresh, { recoveryCodes, notice: 'Authenticator app on: sign-in asks for its code from now on.' });
    },
  );

  route(
    {
      method: 'POST',
      url: `${TWO_FACTOR_PATH}/recovery-codes`,
      summary: 'Makes new recovery codes (the old ones stop working), shown this once; needs a fresh second factor',
      responses: { 200: { description: 'The codes' }, 400: { description: 'Step-up refused' } },
    },
    async (signedIn, request, reply) => {
      const refusal = await stepUpRefusal(context, signedIn, formFields(request)[STEP_UP_FIELD]);
      if (refusal) return sendTwoFactor(context, reply, signedIn, stepUpRefused(refusal));
      if (!(await totpState(context.db, signedIn.user.id)).enrolled) return reply.redirect(TWO_FACTOR_PATH, 303);
      const recoveryCodes = await replaceRecoveryCodes(context.db, signedIn.user.id, context.now());
      return sendTwoFactor(context, reply, signedIn, { recoveryCodes, notice: 'New recovery codes made: the old ones no longer work.' });
    },
  );

  route(
    {
      method: 'POST',
      url: `${TWO_FACTOR_PATH}/totp/remove`,
      summary: 'Removes the authenticator app and its recovery codes; needs a fresh second factor',
      responses: { 400: { description: 'Step-up refused' } },
    },
    async (signedIn, request, reply) => {
      const refusal = await stepUpRefusal(context, signedIn, formFields(request)[STEP_UP_FIELD]);
      if (refusal) return sendTwoFactor(context, reply, signedIn, stepUpRefused(refusal));
      await removeTotp(context.db, signedIn.user.id);
      return reply.redirect(`${TWO_FACTOR_PATH}?done=removed`, 303);
    },
  );

  route(
    {
      method: 'POST',
      url: `${TWO_FACTOR_PATH}/require`,
      permission: 'team',
      summary: 'Requires a second factor of every user of the merchant (`required=yes`, needing the user’s own, fresh), or stops requiring it (`required=no`)',
      responses: { 400: { description: 'Refused: no second factor of your own, or the step-up' } },
    },
    async (signedIn, request, reply) => {
      const fields = formFields(request);
      if (fields.required !== 'yes' && fields.required !== 'no')
        return sendTwoFactor(context, reply, signedIn, { status: 400, problem: { field: 'required', message: 'must be yes or no' } });
      const required = fields.required === 'yes';
      if (required) {
        if (!signedIn.secondFactor.enrolled)
          return sendTwoFactor(context, reply, signedIn, {
            status: 400,
            problem: { field: STEP_UP_FIELD, message: 'is needed first: set up a second factor of your own before requiring one of everyone' },
          });
        const refusal = await stepUpRefusal(context, signedIn, fields[STEP_UP_FIELD]);
        if (refusal) return sendTwoFactor(context, reply, signedIn, stepUpRefused(refusal));
      }
      await setRequireTwoFactor(context.db, signedIn.user.merchantId, required);
      return reply.redirect(`${TWO_FACTOR_PATH}?done=${required ? 'required' : 'not-required'}`, 303);
    },
  );

  route(
    {
      method: 'POST',
      url: `${TWO_FACTOR_PATH}/passkeys/options`,
      summary: "The options of a new passkey (JSON, for the page's script)",
      responses: { 200: { description: 'The options for navigator.credentials.create' } },
    },
    async (signedIn, _request, reply) => {
      const { options, sealed } = await registrationOptions(context.db, relyingParty(context), signedIn.user, context.now());
      keepCeremony(context, reply, sealed);
      return reply.header('cache-control', 'no-store').send(options);
    },
  );

  route(
    {
      method: 'POST',
      url: `${TWO_FACTOR_PATH}/passkeys`,
      summary: 'Adds a passkey (form post of the page’s script: `name`, and `response`, the browser’s answer)',
      responses: { 303: { description: 'Added' }, 400: { description: 'Refused: the page, saying why' } },
    },
    async (signedIn, request, reply) => {
      const fields = formFields(request);
      const sealed = takeCeremony(context, request, reply);
      const name = (fields.name ?? '').trim();
      if (!name || name.length > 60)
        return sendTwoFactor(context, reply, signedIn, { status: 400, problem: { field: 'name', message: 'must be 1 to 60 characters' } });
      const answer = ceremonyAnswer(fields.response);
      if (answer === undefined)
        return sendTwoFactor(context, reply, signedIn, {
          status: 400,
          problem: { field: 'name', message: 'was not added: no passkey answer came (this needs the page’s script)' },
        });
      const registered = await registerPasskey(context.db, relyingParty(context), signedIn.user.id, sealed, answer, name, context.now());
      if ('refused' in registered)
        return sendTwoFactor(context, reply, signedIn, { status: 400, problem: { field: 'name', message: `was not added. ${registered.refused}` } });
      await secondFactorGiven(context.db, signedIn.session.idHash, context.now());
      return reply.redirect(`${TWO_FACTOR_PATH}?done=passkey-added`, 303);
    },
  );

  route(
    {
      method: 'POST',
      url: `${TWO_FACTOR_PATH}/passkeys/{id}/remove`,
      summary: 'Removes one of the user’s passkeys; needs a fresh second factor',
      responses: { 404: { description: 'Not one of yours' }, 400: { description: 'Step-up refused' } },
    },
    async (signedIn, request, reply) => {
      const refusal = await stepUpRefusal(context, signedIn, formFields(request)[STEP_UP_FIELD]);
      if (refusal) return sendTwoFactor(context, reply, signedIn, stepUpRefused(refusal));
      if (!(await removePasskey(context.db, signedIn.user.id, (request.params as { id: string }).id)))
        return sendTwoFactor(context, reply, signedIn, { status: 404, notice: 'No such passkey: it was removed already, or it is not yours.' });
      return reply.redirect(`${TWO_FACTOR_PATH}?done=passkey-removed`, 303);
    },
  );
}
