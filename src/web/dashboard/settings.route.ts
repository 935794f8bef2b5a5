import { once } from 'node:events';
import type { IncomingMessage } from 'node:http';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { currentUser } from '../../accounts/web-session.ts';
import { TillError } from '../../common/errors.ts';
import { keyModeOf, modeLabel } from '../../common/modes.ts';
import { SUPPORTED_CHAINS } from '../../common/network.ts';
import type { AppContext } from '../../context.ts';
import { formFields, formFile, formValues } from '../../http/forms.ts';
import { queueWalletChanged } from '../../mail/notices.ts';
import { type Brand, findBrand, LOGO_MAX_BYTES, LOGO_MAX_SIDE, LOGO_TYPE_NAMES, removeLogo, setAccentColor, setLogo } from '../../merchants/brand.ts';
import { changeWallet, withActivity } from '../../merchants/events.ts';
import { checkPayoutAddress, findMerchant, type Merchant, setAcceptedChains, setBusinessDetails } from '../../merchants/merchants.ts';
import { actorOf } from '../kit/actor.ts';
import { accentStylesheetPath, brandLogo } from '../kit/brand.ts';
import { type Html, html } from '../kit/html.ts';
import { modeView } from '../kit/mode.ts';
import { sendPage } from '../kit/page.ts';
import { passwordRefusal, STEP_UP_FIELD, STEP_UP_LABEL, stepUpInput, stepUpRefusal } from '../kit/reauth.ts';
import { csrfInput, type FieldProblem, labelledInput } from './form-controls.ts';
import { type DashboardUser, dashboardPage, onlyFor } from './layout.ts';
import { addDashboardRoute, type DashboardHandler, type DashboardRouteDoc } from './page-route.ts';

export const SETTINGS_PATH = '/dashboard/settings';

/** Each form field's name for people, as its label says it. */
const LABELS: Record<string, string> = {
  name: 'Business name',
  support_email: 'Support email',
  website_url: 'Website',
  wallet: 'Wallet address',
  confirm: 'Last 4 characters',
  password: 'Your password',
  [STEP_UP_FIELD]: STEP_UP_LABEL,
  accept: 'Accepted chains and tokens',
  logo: 'Logo',
  accent_color: 'Accent colour',
};

/** The form field of a field the merchants module names. */
const FORM_FIELD: Record<string, string> = { name: 'name', supportEmail: 'support_email', websiteUrl: 'website_url' };

const SAVED: Record<string, string> = {
  business: 'Business details saved.',
  wallet: 'Payout wallet saved. The overview shows the change for the next 7 days.',
  'wallet-unchanged': 'That is already the payout wallet: nothing changed.',
  chains: 'Accepted chains and tokens saved.',
  logo: 'Logo saved: your payment page and receipts show it.',
  'logo-removed': 'Logo removed: your payment page and receipts show your business name only.',
  accent: 'Accent colour saved: your payment page and receipts use it.',
  'accent-removed': "Accent colour removed: your payment page and receipts use Till's blue.",
};

type SettingsView = {
  merchant: Merchant;
  /** Which form the values and problem belong to; the other forms show what is stored. */
  form?: 'business' | 'wallet' | 'chains' | 'logo' | 'accent';
  values?: Record<string, string>;
  problem?: FieldProblem;
  /** The ticked boxes of a refused chains form. */
  accepted?: string[];
};

const chainLabel = (chain: string) => chain.charAt(0).toUpperCase() + chain.slice(1);

/** Brand: the logo (upload, remove) and the accent colour, each saved on its own; what buyers will see. */
function brandSection(signedIn: DashboardUser, view: SettingsView, brand: Brand): Html {
  const { merchant, problem } = view;
  const current = brand.logo
    ? html`<div class="brand-current">${brandLogo(brand, merchant.name)}<p class="note">${LOGO_TYPE_NAMES[brand.logo.type]}, ${brand.logo.width}×${brand.logo.height} pixels.</p>
<form method="post" action="${SETTINGS_PATH}/logo/remove">${csrfInput(signedIn.csrfToken)}<button type="submit" class="secondary">Remove logo</button></form></div>`
    : html`<p>No logo yet: your pages show your business name.</p>`;
  const accent = view.form === 'accent' ? (view.values?.accent_color ?? '') : (brand.accentColor ?? '');
  const sample = brand.accentColor
    ? html`<link rel="stylesheet" href="${accentStylesheetPath(brand.accentColor)}"><p class="accent-sample-row"><span class="accent-sample">Pay</span> Buttons and the bar at the top of your pages, in ${brand.accentColor}.</p>`
    : html`<p class="note">No accent colour yet: your pages use Till's blue.</p>`;
  return html`<section aria-labelledby="brand-heading"><h2 id="brand-heading">Brand</h2>
<p class="note">Your logo and colour on your payment page and your receipts, in the sandbox and live.</p>
${current}
<form method="post" action="${SETTINGS_PATH}/logo" enctype="multipart/form-data" class="settings-form">${csrfInput(signedIn.csrfToken)}
${labelledInput({ name: 'logo', label: LABELS.logo!, type: 'file', hint: `PNG, JPEG or WebP, at most ${LOGO_MAX_BYTES / 1024} KB and ${LOGO_MAX_SIDE}×${LOGO_MAX_SIDE} pixels. A wide logo about 80 pixels high looks best.`, required: true, attributes: html`accept="image/png,image/jpeg,image/webp"` }, problem)}
<p><button type="submit">${brand.logo ? 'Replace logo' : 'Upload logo'}</button></p></form>
${sample}
<form method="post" action="${SETTINGS_PATH}/accent" class="settings-form">${csrfInput(signedIn.csrfToken)}
${labelledInput({ name: 'accent_color', label: LABELS.accent_color!, value: accent, hint: "# and 6 hexadecimal digits, like #0f766e. White text on it must be readable: a contrast of at least 4.5:1 (WCAG AA). Empty: Till's blue.", autocomplete: 'off', attributes: html`spellcheck="false" autocapitalize="off" maxlength="7" class="short mono"` }, problem)}
<p><button type="submit">Save accent colour</button></p></form></section>`;
}

function settingsBody(signedIn: DashboardUser, view: SettingsView, brand: Brand, now: number): Html {
  const { merchant, problem } = view;
  const value = (form: SettingsView['form'], name: string, stored: string | null) => (view.form === form ? (view.values?.[name] ?? '') : (stored ?? ''));
  const business = html`<section aria-labelledby="business-heading"><h2 id="business-heading">Business details</h2>
${onlyFor(
  signedIn,
  'business',
  html`<form method="post" action="${SETTINGS_PATH}/business" class="settings-form">${csrfInput(signedIn.csrfToken)}
${labelledInput({ name: 'name', label: LABELS.name!, value: value('business', 'name', merchant.name), autocomplete: 'organization', required: true }, problem)}
${labelledInput({ name: 'support_email', label: LABELS.support_email!, type: 'email', value: value('business', 'support_email', merchant.supportEmail), autocomplete: 'email', hint: 'Optional. Where buyers can write to you.' }, problem)}
${labelledInput({ name: 'website_url', label: LABELS.website_url!, type: 'url', value: value('business', 'website_url', merchant.websiteUrl), autocomplete: 'url', hint: 'Optional. https://…' }, problem)}
<p><button type="submit">Save business details</button></p></form>`,
)}</section>`;

  const { mode } = signedIn.modes;
  const address = merchant.wallets[mode];
  const current = address
    ? html`<p>${mode === 'sandbox' ? 'Test payments' : 'Payments'} go to <code class="address">${address}</code>.</p>`
    : html`<p class="attention">No ${modeLabel(mode)} payout wallet yet: your ${modeLabel(mode)} sessions cannot be paid until you set one.</p>`;
  const perMode =
    mode === 'sandbox'
      ? 'Test payments move fake money only, on the test chain. Your live payout wallet is set apart, in live mode.'
      : 'Your test payout wallet is set apart, in test mode.';
  const wallet = html`<section aria-labelledby="wallet-heading"><h2 id="wallet-heading">Payout wallet${mode === 'sandbox' ? ' (test mode)' : ''}</h2>
${current}
<p class="note">${perMode} Only you hold the keys of this address: Till never does. Check it twice, then confirm it with its last 4 characters and your password.</p>
${onlyFor(
  signedIn,
  'wallet',
  html`<form method="post" action="${SETTINGS_PATH}/wallet" class="settings-form">${csrfInput(signedIn.csrfToken)}<input type="hidden" name="mode" value="${keyModeOf(mode)}">
${labelledInput({ name: 'wallet', label: LABELS.wallet!, value: value('wallet', 'wallet', ''), hint: '0x followed by 40 hexadecimal characters, on Base.', autocomplete: 'off', required: true, attributes: html`spellcheck="false" autocapitalize="off" class="mono"` }, problem)}
${labelledInput({ name: 'confirm', label: LABELS.confirm!, value: value('wallet', 'confirm', ''), hint: 'Type the last 4 characters of the address again.', autocomplete: 'off', required: true, attributes: html`spellcheck="false" autocapitalize="off" maxlength="4" class="short mono"` }, problem)}
${labelledInput({ name: 'password', label: LABELS.password!, type: 'password', autocomplete: 'current-password', required: true }, problem)}
${stepUpInput(signedIn, now, 'wallet', problem?.field === STEP_UP_FIELD ? problem.message : undefined, SETTINGS_PATH)}
<p><button type="submit">${address ? `Change ${modeLabel(mode)} payout wallet` : `Set ${modeLabel(mode)} payout wallet`}</button></p></form>`,
)}</section>`;

  const ticked = view.form === 'chains' ? new Set(view.accepted) : new Set(merchant.acceptedChains.flatMap((c) => c.tokens.map((t) => `${c.chain}:${t}`)));
  const chainsInvalid = problem?.field === 'accept';
  const boxes = Object.entries(SUPPORTED_CHAINS).flatMap(([chain, tokens]) =>
    tokens.map((token) => {
      const id = `accept-${chain}-${token}`.toLowerCase();
      return html`<li><input type="checkbox" id="${id}" name="accept" value="${`${chain}:${token}`}"${ticked.has(`${chain}:${token}`) ? html` checked` : ''}><label for="${id}">${token} on ${chainLabel(chain)}</label></li>`;
    }),
  );
  const chains = html`<section aria-labelledby="chains-heading"><h2 id="chains-heading">Accepted chains and tokens</h2>
${onlyFor(
  signedIn,
  'business',
  html`<form method="post" action="${SETTINGS_PATH}/chains">${csrfInput(signedIn.csrfToken)}
<fieldset${chainsInvalid ? html` aria-describedby="accept-problem"` : ''}><legend>Buyers can pay with</legend><ul class="choices">${boxes}</ul>
${chainsInvalid ? html`<p id="accept-problem" class="field-problem">${`${LABELS.accept} ${problem.message}.`}</p>` : ''}</fieldset>
<p class="note">Today Till supports USDC on Base; more chains and tokens will be listed here as they come.</p>
<p><button type="submit">Save accepted chains</button></p></form>`,
)}</section>`;
  return html`${business}${wallet}${chains}${onlyFor(signedIn, 'business', brandSection(signedIn, view, brand))}`;
}

/** The settings page, as stored, or again with a refused form's values and the problem named. */
async function sendSettings(context: AppContext, reply: FastifyReply, signedIn: DashboardUser, status: number, view: SettingsView, notice?: string) {
  const { problem } = view;
  const brand = await findBrand(context.db, view.merchant.id);
  return sendPage(
    reply,
    status,
    dashboardPage({
      signedIn,
      section: 'settings',
      ...(notice ? { notice } : {}),
      ...(problem ? { problem: `${LABELS[problem.field] ?? problem.field} ${problem.message}.` } : {}),
      body: settingsBody(signedIn, view, brand, context.now()),
    }),
  );
}

/** A refusal of the merchants module as the form's field and its problem. */
function problemOf(error: TillError, field: string): FieldProblem {
  const message =
    error.code === 'invalid_field' && error.field && error.message.startsWith(`${error.field} `) ? error.message.slice(error.field.length + 1) : error.message;
  return { field, message };
}

/** Why a typed wallet address is refused, by field, or the address in its checksummed (EIP-55) form. */
function checkWalletForm(fields: Record<string, string>): FieldProblem | { address: string } {
  const typed = (fields.wallet ?? '').trim();
  if (!typed) return { field: 'wallet', message: 'must not be empty' };
  const checked = checkPayoutAddress(typed);
  if ('problem' in checked) return { field: 'wallet', message: checked.problem };
  const { address } = checked;
  if ((fields.confirm ?? '').trim().toLowerCase() !== address.slice(-4).toLowerCase())
    return { field: 'confirm', message: 'do not match the end of the address: type its last 4 characters again' };
  return { address };
}

async function merchantOf(context: AppContext, signedIn: DashboardUser): Promise<Merchant> {
  const merchant = await findMerchant(context.db, signedIn.user.merchantId);
  if (!merchant) throw new TillError('not_found', { what: 'Merchant' });
  return merchant;
}

const POST_RESPONSES = {
  303: { description: 'Saved: back to the settings page, which says so' },
  400: { description: 'Refused: the settings page again, naming the field' },
  403: { description: 'No CSRF token, or posted from another origin' },
};

/** A logo form's body: the file (at most LOGO_MAX_BYTES) and its multipart framing, with room to refuse a larger file by name. */
const LOGO_FORM_BODY_LIMIT = 1024 * 1024;

/** A logo form's parts: the file and the CSRF token, with room for a few more fields. */
const LOGO_FORM_LIMITS = { files: 1, fields: 8 };

/** Once the rest of a request's body has arrived (and been dropped), or the client has gone. */
async function drained(raw: IncomingMessage): Promise<void> {
  if (raw.readableEnded || raw.destroyed) return;
  raw.resume();
  await once(raw, 'end').catch(() => undefined);
}

/** Why a logo form's body was too large, for people: its size when the browser said it (Content-Length). */
function oversizedLogo(request: FastifyRequest): string {
  const sent = Number(request.headers['content-length']);
  const size = Number.isFinite(sent) && sent > LOGO_FORM_BODY_LIMIT ? `about ${(sent / (1024 * 1024)).toFixed(1)} MB` : 'more than 1 MB';
  return `is ${size}: at most ${LOGO_MAX_BYTES / 1024} KB are taken. Save it smaller (a logo needs no more than 512×512 pixels)`;
}

/** Settings: business details, the payout wallet (behind the password), accepted chains and tokens, the brand. */
export function registerSettings(app: FastifyInstance, context: AppContext): void {
  addDashboardRoute(
    app,
    context,
    {
      method: 'GET',
      url: SETTINGS_PATH,
      permission: 'view',
      summary: "The signed-in merchant's settings: business details, payout wallet, accepted chains and tokens, brand",
    },
    async (signedIn, request, reply) => {
      const saved = (request.query as Record<string, string | undefined>).saved;
      return sendSettings(context, reply, signedIn, 200, { merchant: await merchantOf(context, signedIn) }, saved ? SAVED[saved] : undefined);
    },
  );

  const post = (
    url: string,
    summary: string,
    description: string,
    handle: DashboardHandler,
    options: Partial<Pick<DashboardRouteDoc, 'bodyLimit' | 'formLimits' | 'responses' | 'permission'>> = {},
    scope: FastifyInstance = app,
  ) =>
    addDashboardRoute(
      scope,
      context,
      {
        method: 'POST',
        url: `${SETTINGS_PATH}/${url}`,
        summary,
        description,
        permission: 'business',
        ...options,
        responses: { ...POST_RESPONSES, ...options.responses },
      },
      handle,
    );

  post(
    'business',
    "Sets the merchant's business details (form post)",
    'Takes `name`, `support_email` and `website_url` (both optional) and `csrf` as a form.',
    async (signedIn, request, reply) => {
      const fields = formFields(request);
      const values = { name: fields.name ?? '', support_email: fields.support_email ?? '', website_url: fields.website_url ?? '' };
      try {
        await withActivity(
          context.db,
          signedIn.user.merchantId,
          actorOf(signedIn.user, request),
          (trx) => setBusinessDetails(trx, signedIn.user.merchantId, { name: values.name, supportEmail: values.support_email, websiteUrl: values.website_url }),
          () => ({ type: 'business_changed', mode: null, detail: { name: values.name, support_email: values.support_email, website: values.website_url } }),
          context.now(),
        );
      } catch (error) {
        if (!(error instanceof TillError) || !error.field) throw error;
        const merchant = await merchantOf(context, signedIn);
        return sendSettings(context, reply, signedIn, 400, {
          merchant,
          form: 'business',
          values,
          problem: problemOf(error, FORM_FIELD[error.field] ?? error.field),
        });
      }
      return reply.redirect(`${SETTINGS_PATH}?saved=business`, 303);
    },
  );

  post(
    'wallet',
    'Sets or changes the payout wallet (form post, with the password)',
    "Sets the wallet of the mode the dashboard shows. Takes `wallet` (an EVM address; mixed case must be its EIP-55 checksum), `confirm` (its last 4 characters), `password` (the signed-in user's), `mode` (`test` or `live`: the mode the form was shown in, which must still be the one shown; without it, the mode shown) and `csrf`. The change is recorded in the merchant's audit and shown on the overview.",
    async (signedIn, request, reply) => {
      const fields = formFields(request);
      const values = { wallet: fields.wallet ?? '', confirm: fields.confirm ?? '' };
      const merchant = await merchantOf(context, signedIn);
      const refuse = (problem: FieldProblem) => sendSettings(context, reply, signedIn, 400, { merchant, form: 'wallet', values, problem });
      const checked = checkWalletForm(fields);
      if ('field' in checked) return refuse(checked);
      const wrongPassword = await passwordRefusal(context, signedIn, fields.password);
      if (wrongPassword) return refuse({ field: 'password', message: wrongPassword });
      const stepUp = await stepUpRefusal(context, signedIn, fields[STEP_UP_FIELD]);
      if (stepUp) return refuse({ field: STEP_UP_FIELD, message: stepUp });
      const { mode } = signedIn.modes;
      // The form names the mode it was shown in: a switch made in another tab since never sets the other mode's wallet.
      if (fields.mode !== undefined && fields.mode !== keyModeOf(mode))
        return refuse({
          field: 'wallet',
          message: `was typed in ${fields.mode === 'test' ? 'test' : 'live'} mode, but the dashboard has since switched to ${modeLabel(mode)} mode: check the wallet below and type it again`,
        });
      if (merchant.wallets[mode] === checked.address) return reply.redirect(`${SETTINGS_PATH}?saved=wallet-unchanged`, 303);
      const now = context.now();
      // The change and the mail that tells every user of it commit together.
      await context.db.transaction().execute(async (trx) => {
        await changeWallet(trx, { merchantId: merchant.id, actor: actorOf(signedIn.user, request), mode, walletAddress: checked.address }, now);
        await queueWalletChanged(trx, merchant.id, { wallet: checked.address, previous: merchant.wallets[mode] }, mode, now);
      });
      return reply.redirect(`${SETTINGS_PATH}?saved=wallet`, 303);
    },
    { permission: 'wallet' },
  );

  post(
    'chains',
    'Sets the chains and tokens the merchant accepts (form post)',
    'Takes `accept` once per ticked box, as `chain:TOKEN`, and `csrf`.',
    async (signedIn, request, reply) => {
      const accepted = formValues(request, 'accept');
      const merchant = await merchantOf(context, signedIn);
      const refuse = (message: string) =>
        sendSettings(context, reply, signedIn, 400, { merchant, form: 'chains', accepted, problem: { field: 'accept', message } });
      if (accepted.length === 0) return refuse('must name at least one: tick a token');
      const byChain = new Map<string, string[]>();
      for (const entry of accepted) {
        const [chain = '', token = ''] = entry.split(':');
        byChain.set(chain, [...(byChain.get(chain) ?? []), token]);
      }
      try {
        await withActivity(
          context.db,
          merchant.id,
          actorOf(signedIn.user, request),
          (trx) =>
            setAcceptedChains(
              trx,
              merchant.id,
              [...byChain].map(([chain, tokens]) => ({ chain, tokens })),
            ),
          () => ({ type: 'chains_changed', mode: null, detail: { accepted: accepted.join(' ') } }),
          context.now(),
        );
      } catch (error) {
        if (!(error instanceof TillError)) throw error;
        return refuse(`refused: ${error.message}`);
      }
      return reply.redirect(`${SETTINGS_PATH}?saved=chains`, 303);
    },
  );

  /** A brand form refused by the brand module: the page again, naming the field and its problem. */
  const refuseBrand = async (signedIn: DashboardUser, reply: FastifyReply, error: unknown, form: 'logo' | 'accent', values?: Record<string, string>) => {
    if (!(error instanceof TillError) || !error.field) throw error;
    const merchant = await merchantOf(context, signedIn);
    return sendSettings(context, reply, signedIn, 400, { merchant, form, ...(values ? { values } : {}), problem: problemOf(error, error.field) });
  };

  // The logo form in a scope of its own: a body over its limit is refused by the framework before
  // the handler runs (however large it is: the limit is read from Content-Length, or counted as it
  // arrives, and Node reads the rest and drops it), and this form answers that with the settings page
  // naming the field, as it answers any other refused logo, never with the API's JSON.
  app.register(async (logoScope) => {
    logoScope.setErrorHandler(async (error: FastifyError, request, reply) => {
      // Only the size a browser can send: more parts than the form has (413 `form_too_large`) is no browser's, and keeps the API's answer.
      const tooLarge = error.code === 'FST_ERR_CTP_BODY_TOO_LARGE';
      // The guard let the post in only for a signed-in browser of ours, before the body was read.
      const signedIn = tooLarge ? await currentUser(context, request) : undefined;
      if (!signedIn) throw error;
      // The browser is still sending the file: the rest of the body is read and dropped before the page
      // is answered, so it gets the page rather than a connection closed under it. Only a signed-in
      // browser of ours gets here, and the server's request timeout bounds how long it may send.
      await drained(request.raw);
      reply.removeHeader('connection');
      const user: DashboardUser = { ...signedIn, modes: modeView(context, request) };
      const problem = { field: 'logo', message: oversizedLogo(request) };
      return sendSettings(context, reply, user, 413, { merchant: await merchantOf(context, user), form: 'logo', problem });
    });
    post(
      'logo',
      'Uploads the logo of the hosted payment page and receipts (multipart form post)',
      'Takes `logo` (a PNG, JPEG or WebP file of at most 256 KB and 1024×1024 pixels, at least 16×16; its type is read from its content, never from its name or declared type) and `csrf` as `multipart/form-data`, in a body of at most 1 MiB of at most 1 file and 8 fields. A larger body is answered 413 with the settings page naming the logo field, whatever its size; more parts, 413 `form_too_large`. Not signed in: on to sign-in before the body is read.',
      async (signedIn, request, reply) => {
        try {
          await withActivity(
            context.db,
            signedIn.user.merchantId,
            actorOf(signedIn.user, request),
            (trx) => setLogo(trx, signedIn.user.merchantId, formFile(request, 'logo')?.bytes ?? new Uint8Array(), context.now()),
            () => ({ type: 'brand_changed', mode: null, detail: { logo: 'uploaded' } }),
            context.now(),
          );
        } catch (error) {
          return refuseBrand(signedIn, reply, error, 'logo');
        }
        return reply.redirect(`${SETTINGS_PATH}?saved=logo`, 303);
      },
      {
        bodyLimit: LOGO_FORM_BODY_LIMIT,
        formLimits: LOGO_FORM_LIMITS,
        responses: { 413: { description: 'The body is over 1 MiB: the settings page again, naming the logo field (more parts: `form_too_large`)' } },
      },
      logoScope,
    );
  });

  post('logo/remove', 'Removes the logo (form post)', 'Takes `csrf`.', async (signedIn, request, reply) => {
    await withActivity(
      context.db,
      signedIn.user.merchantId,
      actorOf(signedIn.user, request),
      (trx) => removeLogo(trx, signedIn.user.merchantId, context.now()),
      () => ({ type: 'brand_changed', mode: null, detail: { logo: 'removed' } }),
      context.now(),
    );
    return reply.redirect(`${SETTINGS_PATH}?saved=logo-removed`, 303);
  });

  post(
    'accent',
    'Sets the accent colour of the hosted payment page and receipts (form post)',
    "Takes `accent_color` (`#rrggbb`; refused when white text on it has a contrast below 4.5:1, WCAG AA; empty: Till's own blue) and `csrf`.",
    async (signedIn, request, reply) => {
      const typed = formFields(request).accent_color ?? '';
      let color: string | null;
      try {
        color = await withActivity(
          context.db,
          signedIn.user.merchantId,
          actorOf(signedIn.user, request),
          (trx) => setAccentColor(trx, signedIn.user.merchantId, typed, context.now()),
          (set) => ({ type: 'brand_changed', mode: null, detail: { accent: set } }),
          context.now(),
        );
      } catch (error) {
        return refuseBrand(signedIn, reply, error, 'accent', { accent_color: typed });
      }
      return reply.redirect(`${SETTINGS_PATH}?saved=${color ? 'accent' : 'accent-removed'}`, 303);
    },
  );
}
