// The hosted payment page's script: finds the buyer's wallets (EIP-6963, else window.ethereum),
// connects, switches to Base, checks the USDC balance, has the wallet sign an EIP-3009
// TransferWithAuthorization and sends it as X-PAYMENT to the session's x402 endpoint (same origin).
// Once paid, it asks for the receipt mail at the address the buyer typed, if any.
import { TRANSFER_WITH_AUTHORIZATION } from '../../../common/network.ts';
import { mailAddressProblem } from '../../../mail/address.ts';
import { RECEIPT_MAIL_JSON_PATH, RECEIPT_MAIL_PATH } from '../../../mail/receipt-request.ts';
import { formatMinor, MAX_AMOUNT_MAJOR_UNITS } from '../../../money/decimal.ts';
import { formatUsdc } from '../../../money/usdc.ts';
import { discoverWallets, switchToChain, type Wallet } from '../../kit/wallets.ts';
import { REQUOTE_CODES, X402_SENTENCES } from './messages.ts';

type Offer = { asset: string; payTo: string; maxAmountRequired: string; maxTimeoutSeconds: number; extra: { name?: string; version?: string } };
type Paid = { status: 'SUCCESS'; paymentSessionId: string; paymentId: string; receipt: string };
/** What an offer is the price of, as the challenge says it: the amount in the session currency. */
type Price = { amount: number; currency: string };
/** An amount in the session currency: its minor units, and its text with exactly the currency's decimals ("3.00"). */
type Amount = { minor: bigint; text: string };
/** What the amount field holds: an amount when it reads as one, and why it can't be paid when it can't. */
type Field = { amount?: Amount; problem?: string };
/** An answer of the x402 endpoint, or undefined when none arrived (network error). */
type Reply = { status: number; body: Record<string, unknown>; retryAfterS: number | undefined } | undefined;

const REDIRECT_DELAY_S = 5;
const VALIDITY_S = 300;
const REQUOTE_DELAY_MS = 400;
const DEFAULT_RETRY_S = 5;
const SLOW_CONFIRMATION_MS = 60_000;
/** How often an open page asks for the session's challenge again: a change by the shop (E2) shows within this. */
const REFRESH_MS = 5_000;
const GONE_AFTER_PROOF =
  'This payment is no longer open. If your wallet shows the USDC as sent, contact the shop with your wallet address; otherwise nothing was charged.';

const root = document.getElementById('pay-data');
if (root) start(root);

function start(root: HTMLElement): void {
  const data = root.dataset as Record<string, string>;
  const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T | null;
  const status = $('status')!;
  const outcome = $('outcome')!;
  const walletList = $('wallets')!;
  const hint = $('wallet-hint')!;
  const amountInput = $<HTMLInputElement>('amount');
  const amountForm = $<HTMLFormElement>('amount-form');
  const amountHelp = $('amount-help');
  const usdcText = $('usdc-text')!;
  const amountText = $('amount-text')!;
  const countdown = $('countdown');
  const cancel = $('cancel');
  const emailField = $('receipt-email-field');
  const emailInput = $<HTMLInputElement>('receipt-email');
  const emailHelp = $('receipt-email-help');
  const chainHex = `0x${Number(data.chainId).toString(16)}`;
  const exponent = Number(data.exponent);
  const editable = data.editable === 'true' && amountInput !== null && amountForm !== null;
  const wallets = new Map<string, Wallet>();
  let busy = false;
  /** A proof was sent and its outcome is not known yet: no way to pay again is offered. */
  let confirming = false;
  let finished = false;
  let expired = false;

  /** Progress, read out by screen readers; shown unless an outcome box says the same. */
  const say = (text: string, shown = true) => {
    status.textContent = text;
    status.classList.toggle('visually-hidden', !shown);
  };
  const money = (amount: Amount) => `${amount.text} ${data.currency}`;
  // Only an editable session's amount is the buyer's to send; a fixed one is the session's own.
  const payUrlFor = (amount: Amount | undefined) => (editable && amount ? `${data.payUrl}?amount=${encodeURIComponent(amount.text)}` : data.payUrl!);

  // The amount of an editable session: what the field holds, and the amount the quote on screen is of.
  const parseAmount = (value: string): Amount | string => {
    const text = value.trim().replace(',', '.');
    if (!/^\d+(\.\d+)?$/.test(text)) return 'Enter an amount such as 25 or 25.50.';
    const [whole = '0', fraction = ''] = text.split('.');
    if (fraction.length > exponent) return `Use at most ${exponent} decimals.`;
    const minor = BigInt(whole) * 10n ** BigInt(exponent) + BigInt(fraction.padEnd(exponent, '0') || '0');
    return { minor, text: formatMinor(minor, exponent) };
  };
  const floor = amountInput?.dataset.min === undefined ? undefined : parseAmount(amountInput.dataset.min);
  const readAmount = (value: string): Field => {
    const amount = parseAmount(value);
    if (typeof amount === 'string') return { problem: amount };
    if (amount.minor <= 0n) return { amount, problem: 'Enter an amount above zero.' };
    if (amount.minor > MAX_AMOUNT_MAJOR_UNITS * 10n ** BigInt(exponent))
      return { amount, problem: `The amount must be at most ${MAX_AMOUNT_MAJOR_UNITS} ${data.currency}.` };
    if (typeof floor === 'object' && amount.minor < floor.minor) return { amount, problem: `The amount must be at least ${money(floor)}.` };
    return { amount };
  };
  const field = (): Field => (editable ? readAmount(amountInput.value) : {});
  /** The quote on screen (editable sessions): the amount it is of, and its USDC value. */
  // Every session's, for the shop may change a fixed amount (E2) while the page is open: the heading, the USDC figure and the Pay buttons show this one.
  const initial = editable ? field().amount : parseAmount(data.amount ?? '');
  let quoted: { amount: Amount; usdc: bigint } | undefined = typeof initial === 'object' ? { amount: initial, usdc: BigInt(data.usdc!) } : undefined;
  /** The field holds a payable amount, and it is the quoted one: only then is there anything to pay. */
  const amountReady = () => {
    if (!editable) return true;
    const { amount, problem } = field();
    return !problem && amount !== undefined && quoted !== undefined && amount.minor === quoted.amount.minor;
  };
  const payable = () => !busy && !confirming && !finished && !expired && amountReady();

  // The optional receipt address: checked as the server checks it, told beside the field. A payment
  // with an address that is not one waits until the buyer corrects it or clears it.
  const defaultEmailHelp = emailHelp?.textContent ?? '';
  const readEmail = (): { email?: string; problem?: string } => {
    const email = emailInput?.value.trim() ?? '';
    if (!email) return {};
    const problem = emailInput?.validity.typeMismatch ? mailAddressProblem('') : mailAddressProblem(email);
    return problem ? { problem: `This ${problem}.` } : { email };
  };
  const showEmail = (): boolean => {
    const { problem } = readEmail();
    emailInput?.setAttribute('aria-invalid', problem ? 'true' : 'false');
    if (emailHelp) {
      emailHelp.textContent = problem ?? defaultEmailHelp;
      emailHelp.classList.toggle('error', Boolean(problem));
    }
    return !problem;
  };
  if (emailField && emailInput) {
    emailField.hidden = false;
    emailInput.addEventListener('change', showEmail);
    // Once told, the message goes as soon as the address is right (or gone), not at the next blur.
    emailInput.addEventListener('input', () => {
      if (emailInput.getAttribute('aria-invalid') === 'true') showEmail();
    });
  }

  // Wallets: every provider that announces itself, and window.ethereum when none does.
  const renderWallets = () => {
    walletList.replaceChildren();
    hint.hidden = finished || expired || confirming;
    if (hint.hidden) return;
    for (const wallet of wallets.values()) {
      const item = document.createElement('li');
      const button = document.createElement('button');
      button.type = 'button';
      button.disabled = !payable();
      if (/^data:image\/(png|svg\+xml|webp|jpeg);/.test(wallet.info.icon)) {
        const icon = document.createElement('img');
        icon.src = wallet.info.icon;
        icon.alt = '';
        button.append(icon);
      }
      const label = document.createElement('span');
      label.className = 'pay-label';
      label.textContent = `Pay with ${wallet.info.name}`;
      // The very USDC figure of the summary: one amount on the page.
      const figure = document.createElement('span');
      figure.className = 'pay-amount';
      figure.dataset.payAmount = '';
      const usdc = usdcText.textContent ?? '';
      figure.textContent = usdc === '—' || usdc === '…' ? '' : `${usdc} USDC`;
      button.append(label, figure);
      button.addEventListener('click', () => void pay(wallet));
      item.append(button);
      walletList.append(item);
    }
    hint.textContent = wallets.size
      ? 'Choose the wallet to pay from. It will ask you to approve the payment.'
      : 'No browser wallet was found. Open this page in a wallet app (scan the QR code with your phone) or install a wallet extension such as MetaMask, Coinbase Wallet or Rabby.';
  };
  // A wallet found while a payment is under way waits for its end (which renders the list again):
  // the buttons and the status line are the payment's until then.
  discoverWallets((found) => {
    for (const wallet of found) wallets.set(wallet.info.uuid, wallet);
    if (!busy) renderWallets();
  });

  // Countdown to the session's expiry.
  if (countdown?.dataset.expiresAt) {
    const expiresAt = Date.parse(countdown.dataset.expiresAt);
    const tick = () => {
      const left = Math.max(0, Math.floor((expiresAt - Date.now()) / 1000));
      countdown.textContent =
        left >= 3600
          ? `${Math.floor(left / 3600)} h ${Math.floor((left % 3600) / 60)} min`
          : left >= 60
            ? `${Math.floor(left / 60)} min ${left % 60} s`
            : `${left} s`;
      if (left === 0 && !finished && !busy && !confirming) {
        expired = true;
        clearInterval(timer);
        renderWallets();
        say('This payment has expired. Nothing was charged; go back to the shop to start again.');
      }
    };
    const timer = setInterval(tick, 1000);
    tick();
  }

  /** One request to the session's x402 endpoint; undefined when no answer arrived. */
  async function ask(url: string, proof?: string): Promise<Reply> {
    try {
      const response = await fetch(url, { headers: { accept: 'application/json', ...(proof ? { 'x-payment': proof } : {}) } });
      const body = (await response.json().catch(() => ({}))) as Record<string, unknown>;
      const retryAfter = Number.parseInt(response.headers.get('retry-after') ?? '', 10);
      return { status: response.status, body, retryAfterS: Number.isFinite(retryAfter) ? retryAfter : undefined };
    } catch {
      return undefined;
    }
  }

  /** The offer of the session's challenge at `url`: the stored quote of that amount, which a proof is checked against. */
  async function fetchOffer(url: string): Promise<{ offer: Offer; price?: Price } | { paid: Paid } | { problem: string; code?: string }> {
    const reply = await ask(url);
    if (!reply) return { problem: "We couldn't reach the payment service. Check your connection and try again; nothing was charged." };
    if (reply.status === 200) return { paid: reply.body as unknown as Paid };
    if (reply.status === 402) {
      const offer = (reply.body.accepts as Offer[] | undefined)?.[0];
      const { amount, currency } = reply.body;
      if (offer) return typeof amount === 'number' && typeof currency === 'string' ? { offer, price: { amount, currency } } : { offer };
      const code = String(reply.body.error);
      return { problem: X402_SENTENCES[code as keyof typeof X402_SENTENCES] ?? String(reply.body.message), code };
    }
    return { problem: httpProblem(reply.status, reply.body) };
  }

  function httpProblem(code: number, body: Record<string, unknown>): string {
    if (code === 404) return 'This payment no longer exists or has expired. Nothing was charged.';
    if (code === 422) return "This shop can't take payments yet (no payout wallet is set up). Nothing was charged.";
    if (code === 429) return 'Too many attempts in a short time. Please wait a minute and try again.';
    if (code === 503) return "We can't reach the payment network or price this payment right now. Nothing was charged; please try again shortly.";
    const error = body.error as { message?: string } | undefined;
    return error?.message ?? 'Something went wrong. Nothing was charged; please try again.';
  }

  /** The USDC figure, and the same on every Pay button: one amount on the page. */
  function showUsdc(text: string): void {
    usdcText.textContent = text;
    for (const figure of Array.from(walletList.querySelectorAll('[data-pay-amount]'))) figure.textContent = text === '—' || text === '…' ? '' : `${text} USDC`;
  }

  /** The quote on screen: the amount (the heading) and the USDC it is paid with (the summary, the Pay buttons), together. */
  function showQuote(amount: Amount | undefined, usdc: bigint): void {
    if (amount) {
      quoted = { amount, usdc };
      amountText.textContent = money(amount);
    }
    showUsdc(formatUsdc(usdc));
  }

  /**
   * The amount an offer is the price of, as its challenge says (the shop may have changed it with
   * E2), else `fallback`. A change of currency reloads the page, drawn again by the server whole.
   */
  function amountOf(found: { price?: Price }, fallback: Amount | undefined): Amount | undefined | 'reload' {
    if (!found.price) return fallback;
    if (found.price.currency !== data.currency) return 'reload';
    const amount = parseAmount(String(found.price.amount));
    return typeof amount === 'object' ? amount : fallback;
  }

  /** Puts an offer on screen, the heading with its quote; false when the page is being loaded again instead. */
  function showOffer(found: { offer: Offer; price?: Price }, fallback: Amount | undefined): boolean {
    const amount = amountOf(found, fallback);
    if (amount === 'reload') {
      window.location.reload();
      return false;
    }
    showQuote(amount, BigInt(found.offer.maxAmountRequired));
    return true;
  }

  // An open page asks again every few seconds, while nothing is under way: a change the shop made
  // (a new amount through E2) or a new quote shows at once, the heading, the USDC and the Pay buttons
  // together; a payment made elsewhere (another tab) shows as paid. The challenge is cached by the
  // service, so this costs it next to nothing.
  const refresh = async () => {
    if (!payable() || document.hidden) return;
    const asked = quoted?.amount;
    const answer = await fetchOffer(payUrlFor(asked));
    if (busy || confirming || finished || expired) return;
    if ('paid' in answer) return succeed(answer.paid);
    // A problem is left for the buyer's next click to tell; an answer for an amount the field no longer holds is dropped.
    if (!('offer' in answer) || (editable && field().amount?.minor !== asked?.minor)) return;
    // Drawn in place (the Pay buttons are not made again, so a focused one keeps the focus), and a
    // new amount is said to screen readers too.
    if (!showOffer(answer, asked)) return;
    if (quoted && asked && quoted.amount.minor !== asked.minor) say(`The shop changed the amount of this payment to ${money(quoted.amount)}.`);
  };
  setInterval(() => void refresh(), REFRESH_MS);

  // Editable amount: checked here as it is typed, and quoted through the x402 endpoint's ?amount=.
  // Pay is enabled only while the field holds the very amount the quote on screen is of.
  if (editable) {
    const defaultHelp = amountHelp?.textContent ?? '';
    let timer: ReturnType<typeof setTimeout> | undefined;
    const requote = async (amount: Amount) => {
      say(`Getting the price of ${money(amount)}…`);
      const answer = await fetchOffer(payUrlFor(amount));
      // Only the answer for what the field holds now counts: a later amount, or a payment under way, wins.
      if (busy || confirming || finished || field().amount?.minor !== amount.minor) return;
      if ('paid' in answer) return succeed(answer.paid);
      if ('offer' in answer) {
        if (!showOffer(answer, amount)) return;
        say('');
      } else say(answer.problem);
      renderWallets();
    };
    const update = (now: boolean) => {
      if (busy || confirming || finished) return;
      clearTimeout(timer);
      const { amount, problem } = field();
      amountInput.setAttribute('aria-invalid', problem ? 'true' : 'false');
      if (amountHelp) {
        amountHelp.textContent = problem ?? defaultHelp;
        amountHelp.classList.toggle('error', Boolean(problem));
      }
      if (amount) amountText.textContent = money(amount);
      if (problem || !amount) {
        showUsdc('—');
        say('');
      } else if (quoted && amount.minor === quoted.amount.minor) {
        showQuote(amount, quoted.usdc);
        say('');
      } else {
        showUsdc('…');
        say(`Getting the price of ${money(amount)}…`);
        timer = setTimeout(() => void requote(amount), now ? 0 : REQUOTE_DELAY_MS);
      }
      renderWallets();
    };
    amountInput.addEventListener('input', () => update(false));
    amountForm.addEventListener('submit', (event) => {
      event.preventDefault();
      update(true);
    });
  }

  /** The amount and the receipt address can't change while they are being paid. */
  function lockFields(locked: boolean): void {
    if (emailInput) emailInput.readOnly = locked;
    if (!amountInput || !amountForm) return;
    amountInput.readOnly = locked;
    amountForm.querySelectorAll('button').forEach((button) => {
      button.disabled = locked;
    });
  }

  async function pay(wallet: Wallet): Promise<void> {
    if (!payable()) return;
    if (!showEmail()) {
      emailInput?.focus();
      return;
    }
    // The amount on screen, fixed for this payment: the proof is for its quote and goes with its ?amount=.
    const amount = quoted?.amount;
    const url = payUrlFor(amount);
    busy = true;
    lockFields(true);
    outcome.hidden = true;
    renderWallets();
    const { provider } = wallet;
    try {
      say(`Connecting to ${wallet.info.name}…`);
      const accounts = (await provider.request({ method: 'eth_requestAccounts' })) as string[];
      const from = accounts?.[0];
      if (!from) throw new Error('The wallet shared no account.');
      await switchToChain(provider, chainHex, data.rpcUrl ?? '', say);
      say('Getting the latest price…');
      const quotedNow = await fetchOffer(url);
      if ('paid' in quotedNow) return succeed(quotedNow.paid);
      if ('problem' in quotedNow) {
        if (quotedNow.code === 'payment_in_progress')
          return say('A payment for this is already being confirmed. Reload this page in a minute to see how it ended.');
        return fail(quotedNow.problem, false);
      }
      const { offer } = quotedNow;
      const value = BigInt(offer.maxAmountRequired);
      const latest = amountOf(quotedNow, amount);
      if (latest === 'reload') return window.location.reload();
      showQuote(latest, value);
      // The shop changed the amount since the buyer chose to pay: nothing is signed until they have seen the new one.
      if (latest && amount && latest.minor !== amount.minor)
        return say(`The shop changed the amount of this payment to ${money(latest)} (${formatUsdc(value)} USDC). Check it, then choose your wallet again.`);
      say('Checking your USDC balance…');
      const balanceHex = await provider.request({
        method: 'eth_call',
        params: [{ to: offer.asset, data: `0x70a08231${from.slice(2).toLowerCase().padStart(64, '0')}` }, 'latest'],
      });
      const balance = BigInt(typeof balanceHex === 'string' && balanceHex !== '0x' ? balanceHex : '0x0');
      if (balance < value)
        return fail(
          `Your wallet holds ${formatUsdc(balance)} USDC on Base, and this payment needs ${formatUsdc(value)} USDC. Add USDC to your wallet, or choose another one, and try again.`,
          false,
        );
      say('Approve the payment in your wallet…');
      const nonce = `0x${[...crypto.getRandomValues(new Uint8Array(32))].map((b) => b.toString(16).padStart(2, '0')).join('')}`;
      const now = Math.floor(Date.now() / 1000);
      const authorization = {
        from,
        to: offer.payTo,
        value: value.toString(),
        validAfter: String(now - 60),
        validBefore: String(now + VALIDITY_S),
        nonce,
      };
      const typedData = {
        types: {
          EIP712Domain: [
            { name: 'name', type: 'string' },
            { name: 'version', type: 'string' },
            { name: 'chainId', type: 'uint256' },
            { name: 'verifyingContract', type: 'address' },
          ],
          ...TRANSFER_WITH_AUTHORIZATION,
        },
        primaryType: 'TransferWithAuthorization',
        domain: { name: offer.extra.name, version: offer.extra.version, chainId: Number(data.chainId), verifyingContract: offer.asset },
        message: authorization,
      };
      const signature = await provider.request({ method: 'eth_signTypedData_v4', params: [from, JSON.stringify(typedData)] });
      const header = btoa(JSON.stringify({ x402Version: 1, scheme: 'exact', network: 'base', payload: { signature, authorization } }));
      await submit(url, header);
    } catch (error) {
      const code = (error as { code?: number }).code;
      if (code === 4001) say('You declined in your wallet. Nothing was charged; you can try again.');
      else fail(`Your wallet reported a problem: ${(error as Error).message ?? String(error)}. Nothing was charged.`, false);
    } finally {
      busy = false;
      if (!finished && !confirming) lockFields(false);
      renderWallets();
    }
  }

  /**
   * Sends the proof, then the very same proof with the same ?amount= again after each Retry-After
   * until its outcome is known: 200 is paid, a 402 without Retry-After is refused. Anything else
   * (payment_in_progress, a 402 asking to come back, no answer, a 5xx, a 429) means the payment may
   * be under way, so the page says it is confirming and never offers to pay again meanwhile.
   */
  async function submit(url: string, header: string): Promise<void> {
    const sent = Date.now();
    showConfirming('Your payment was sent. This usually takes a few seconds.');
    for (;;) {
      const reply = await ask(url, header);
      if (reply && isOutcome(reply)) {
        if (reply.status === 200) return succeed(reply.body as unknown as Paid);
        confirming = false;
        // The proof went out, so "nothing was charged" is the chain's to say, not the page's.
        if (reply.status === 404) return fail(GONE_AFTER_PROOF, false);
        if (reply.status !== 402) return fail(httpProblem(reply.status, reply.body), true);
        const code = String(reply.body.error);
        const sentence = X402_SENTENCES[code as keyof typeof X402_SENTENCES] ?? String(reply.body.message ?? 'The payment was refused.');
        if (REQUOTE_CODES.has(code)) {
          const fresh = await fetchOffer(url);
          if ('offer' in fresh) showOffer(fresh, quoted?.amount);
        }
        return fail(sentence, code === 'payment_failed' || code === 'insufficient_funds' || code === 'invalid_signature');
      }
      showConfirming(
        Date.now() - sent < SLOW_CONFIRMATION_MS
          ? 'The network is still confirming it. Keep this page open; there is no need to pay again.'
          : 'This is taking longer than usual. There is no need to pay again: this page shows the outcome as soon as the network confirms it, and the shop is told too.',
      );
      const waitS = Math.min(Math.max(reply?.retryAfterS ?? DEFAULT_RETRY_S, 1), 60);
      await new Promise((resolve) => setTimeout(resolve, waitS * 1000));
    }
  }

  /** An answer that ends the payment: paid, or refused for good. Any other (and no answer) may still turn out either way. */
  function isOutcome(reply: NonNullable<Reply>): boolean {
    if (reply.status >= 500 || reply.status === 408 || reply.status === 429) return false;
    return !(reply.status === 402 && (reply.body.error === 'payment_in_progress' || reply.retryAfterS !== undefined));
  }

  /** The payment is being confirmed: said in the outcome box, with no wallet, no "Try again" and no cancel link. */
  function showConfirming(detail: string): void {
    const first = !confirming;
    confirming = true;
    const title = document.createElement('p');
    title.className = 'confirming';
    title.textContent = 'Confirming your payment on the network…';
    const note = document.createElement('p');
    note.className = 'help';
    note.textContent = detail;
    outcome.className = 'outcome pending';
    outcome.replaceChildren(title, note);
    outcome.hidden = false;
    if (cancel) cancel.hidden = true;
    if (!first) return;
    renderWallets();
    say('Confirming your payment on the network…', false);
    outcome.focus();
  }

  function link(href: string, text: string, className = 'button secondary'): HTMLAnchorElement {
    const a = document.createElement('a');
    a.href = href;
    a.className = className;
    a.textContent = text;
    return a;
  }

  /** Only ever the session's own stored URL, and only http(s). */
  function storedUrl(value: string | undefined): URL | undefined {
    if (!value) return undefined;
    try {
      const url = new URL(value);
      return url.protocol === 'https:' || url.protocol === 'http:' ? url : undefined;
    } catch {
      return undefined;
    }
  }

  function succeed(paid: Paid): void {
    finished = true;
    confirming = false;
    renderWallets();
    cancel?.remove();
    lockFields(true);
    // Nothing is left to pay: no time left to count, no page to open on a phone.
    countdown?.parentElement?.parentElement?.setAttribute('hidden', '');
    document.querySelector('aside.qr')?.setAttribute('hidden', '');
    $('pay-data')?.classList.add('paid');
    // The heading says what happened, no longer what to do: "Paid 3.00 USD", not "Pay 3.00 USD".
    $('title')?.replaceChildren('Paid ', amountText);
    const payTitle = $('pay-title');
    if (payTitle) payTitle.textContent = 'Your payment';
    amountForm?.setAttribute('hidden', '');
    say('Paid. Thank you! Your receipt is ready.', false);
    outcome.className = 'outcome success';
    const receipt = `/checkout/v2/orders/receipt/${encodeURIComponent(paid.paymentId)}`;
    const text = document.createElement('p');
    text.textContent = 'Paid. Thank you! Your receipt is ready.';
    const actions = document.createElement('p');
    actions.className = 'actions';
    actions.append(link(receipt, 'View the receipt', 'button'));
    const mailLink = link(`${RECEIPT_MAIL_PATH}?order=${encodeURIComponent(paid.paymentId)}`, 'Email me the receipt');
    outcome.replaceChildren(text, actions);
    const { email } = readEmail();
    emailField?.setAttribute('hidden', '');
    if (email) void mailReceipt(paid.paymentId, email, actions, mailLink);
    else actions.append(mailLink);
    const success = storedUrl(data.successUrl);
    if (success) {
      success.searchParams.set('paymentSessionId', paid.paymentSessionId);
      success.searchParams.set('publicOrderId', paid.paymentId);
      const back = link(success.toString(), 'Return to the merchant now');
      back.id = 'return';
      actions.append(back);
      const note = document.createElement('p');
      note.className = 'help';
      note.textContent = `Taking you back to ${success.host} in ${REDIRECT_DELAY_S} seconds…`;
      outcome.append(note);
      setTimeout(() => window.location.assign(success.toString()), REDIRECT_DELAY_S * 1000);
    }
    outcome.hidden = false;
    outcome.focus();
  }

  /**
   * Asks for the receipt mail at the address typed before paying, and says where it goes or why it
   * doesn't; "Email me the receipt" stays the way to try another address then. `keepalive` lets the
   * request end even when the page goes back to the merchant meanwhile.
   */
  async function mailReceipt(order: string, email: string, actions: HTMLElement, mailLink: HTMLAnchorElement): Promise<void> {
    const note = document.createElement('p');
    note.id = 'receipt-mail';
    note.setAttribute('role', 'status');
    note.textContent = `Sending your receipt to ${email}…`;
    actions.before(note);
    let refusal = `We couldn't send your receipt to ${email}. Nothing else changes: your payment is complete.`;
    try {
      const response = await fetch(RECEIPT_MAIL_JSON_PATH, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json' },
        body: JSON.stringify({ order, email }),
        credentials: 'same-origin',
        keepalive: true,
      });
      const body = (await response.json().catch(() => ({}))) as { email?: string; error?: { message?: string } };
      if (response.ok && body.email) {
        note.textContent = `Receipt sent to ${body.email}.`;
        return;
      }
      if (body.error?.message) refusal = `Your receipt was not sent: ${body.error.message}`;
    } catch {
      // No answer: the refusal above, and the form to try again.
    }
    note.textContent = refusal;
    note.classList.add('error');
    actions.append(mailLink);
  }

  function fail(sentence: string, definitive: boolean): void {
    confirming = false;
    outcome.className = 'outcome failure';
    const text = document.createElement('p');
    text.textContent = sentence;
    const actions = document.createElement('p');
    actions.className = 'actions';
    const retry = document.createElement('button');
    retry.type = 'button';
    retry.textContent = 'Try again';
    retry.addEventListener('click', () => {
      outcome.hidden = true;
      if (cancel) cancel.hidden = false;
      say('');
      walletList.querySelector('button')?.focus();
    });
    actions.append(retry);
    const failUrl = definitive ? storedUrl(data.failUrl) : undefined;
    // After a definitive failure the way back is failUrl, in place of the cancel link.
    if (failUrl) actions.append(link(failUrl.toString(), 'Return to the merchant'));
    if (cancel) cancel.hidden = Boolean(failUrl);
    outcome.replaceChildren(text, actions);
    outcome.hidden = false;
    say(sentence, false);
    outcome.focus();
  }
}
