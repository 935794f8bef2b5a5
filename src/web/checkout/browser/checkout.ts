// The hosted payment page's script: finds the buyer's wallets (EIP-6963, else window.ethereum),
// connects, switches to Base, checks the USDC balance, has the wallet sign an EIP-3009
// TransferWithAuthorization and sends it as X-PAYMENT to the session's x402 endpoint (same origin).
import { TRANSFER_WITH_AUTHORIZATION } from '../../../common/network.ts';
import { REQUOTE_CODES, X402_SENTENCES } from './messages.ts';

type Eip1193 = { request(args: { method: string; params?: unknown }): Promise<unknown> };
type WalletInfo = { uuid: string; name: string; icon: string; rdns: string };
type Wallet = { info: WalletInfo; provider: Eip1193 };
type Offer = { asset: string; payTo: string; maxAmountRequired: string; maxTimeoutSeconds: number; extra: { name?: string; version?: string } };
type Paid = { status: 'SUCCESS'; paymentSessionId: string; paymentId: string; receipt: string };

const USDC_DECIMALS = 6;
const REDIRECT_DELAY_S = 5;
const VALIDITY_S = 300;
const POLL_LIMIT_MS = 5 * 60_000;

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
  const chainHex = `0x${Number(data.chainId).toString(16)}`;
  const exponent = Number(data.exponent);
  const wallets = new Map<string, Wallet>();
  let chosenAmount: string | undefined = data.editable === 'true' ? amountInput?.value : undefined;
  let amountOk = true;
  let busy = false;
  let finished = false;
  let expired = false;

  /** Progress, read out by screen readers; shown unless an outcome box says the same. */
  const say = (text: string, shown = true) => {
    status.textContent = text;
    status.classList.toggle('visually-hidden', !shown);
  };
  const payUrl = () => (chosenAmount === undefined ? data.payUrl! : `${data.payUrl}?amount=${encodeURIComponent(chosenAmount)}`);
  const usdcString = (units: bigint) => {
    const whole = units / 10n ** BigInt(USDC_DECIMALS);
    const fraction = (units % 10n ** BigInt(USDC_DECIMALS)).toString().padStart(USDC_DECIMALS, '0').replace(/0+$/, '');
    return `${whole}.${fraction.padEnd(2, '0')}`;
  };

  // Wallets: every provider that announces itself, and window.ethereum when none does.
  const renderWallets = () => {
    walletList.replaceChildren();
    if (finished || expired) return;
    for (const wallet of wallets.values()) {
      const item = document.createElement('li');
      const button = document.createElement('button');
      button.type = 'button';
      button.disabled = busy || !amountOk;
      if (/^data:image\/(png|svg\+xml|webp|jpeg);/.test(wallet.info.icon)) {
        const icon = document.createElement('img');
        icon.src = wallet.info.icon;
        icon.alt = '';
        button.append(icon);
      }
      button.append(`Pay with ${wallet.info.name}`);
      button.addEventListener('click', () => void pay(wallet));
      item.append(button);
      walletList.append(item);
    }
    hint.textContent = wallets.size
      ? 'Choose the wallet to pay from. It will ask you to approve the payment.'
      : 'No browser wallet was found. Open this page in a wallet app (scan the QR code with your phone) or install a wallet extension such as MetaMask, Coinbase Wallet or Rabby.';
  };
  window.addEventListener('eip6963:announceProvider', (event) => {
    const detail = (event as CustomEvent<Wallet>).detail;
    if (!detail?.info?.uuid || typeof detail.provider?.request !== 'function') return;
    wallets.set(detail.info.uuid, detail);
    renderWallets();
  });
  window.dispatchEvent(new Event('eip6963:requestProvider'));
  setTimeout(() => {
    const injected = (window as unknown as { ethereum?: Eip1193 }).ethereum;
    if (!wallets.size && injected && typeof injected.request === 'function')
      wallets.set('window.ethereum', { info: { uuid: 'window.ethereum', name: 'your browser wallet', icon: '', rdns: '' }, provider: injected });
    renderWallets();
  }, 400);

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
      if (left === 0 && !finished && !busy) {
        expired = true;
        clearInterval(timer);
        renderWallets();
        say('This payment has expired. Nothing was charged; go back to the shop to start again.');
      }
    };
    const timer = setInterval(tick, 1000);
    tick();
  }

  // The offer of the session's challenge for the chosen amount: the same stored quote the page shows.
  async function fetchOffer(): Promise<{ offer: Offer } | { paid: Paid } | { problem: string; code?: string }> {
    const response = await fetch(payUrl(), { headers: { accept: 'application/json' } });
    const body = (await response.json().catch(() => ({}))) as Record<string, unknown>;
    if (response.status === 200) return { paid: body as unknown as Paid };
    if (response.status === 402) {
      const offer = (body.accepts as Offer[] | undefined)?.[0];
      if (offer) {
        usdcText.textContent = usdcString(BigInt(offer.maxAmountRequired));
        return { offer };
      }
      const code = String(body.error);
      return { problem: X402_SENTENCES[code as keyof typeof X402_SENTENCES] ?? String(body.message), code };
    }
    return { problem: httpProblem(response.status, body) };
  }

  function httpProblem(code: number, body: Record<string, unknown>): string {
    if (code === 404) return 'This payment no longer exists or has expired. Nothing was charged.';
    if (code === 422) return "This shop can't take payments yet (no payout wallet is set up). Nothing was charged.";
    if (code === 429) return 'Too many attempts in a short time. Please wait a minute and try again.';
    if (code === 503) return "We can't reach the payment network or price this payment right now. Nothing was charged; please try again shortly.";
    const error = body.error as { message?: string } | undefined;
    return error?.message ?? 'Something went wrong. Nothing was charged; please try again.';
  }

  // Editable amount: checked here against the floor, and quoted through the x402 endpoint's ?amount=.
  if (amountInput && amountForm) {
    const min = amountInput.dataset.min;
    const scaled = (text: string) => {
      const [whole = '0', fraction = ''] = text.split('.');
      return BigInt(whole) * 10n ** BigInt(exponent) + BigInt(fraction.padEnd(exponent, '0') || '0');
    };
    const defaultHelp = amountHelp?.textContent ?? '';
    const check = (): string | undefined => {
      const text = amountInput.value.trim().replace(',', '.');
      if (!/^\d+(\.\d+)?$/.test(text)) return 'Enter an amount such as 25 or 25.50.';
      if ((text.split('.')[1] ?? '').length > exponent) return `Use at most ${exponent} decimals.`;
      if (scaled(text) <= 0n) return 'Enter an amount above zero.';
      if (min && scaled(text) < scaled(min)) return `The amount must be at least ${min} ${data.currency}.`;
      return undefined;
    };
    let timer: ReturnType<typeof setTimeout> | undefined;
    const update = async () => {
      const problem = check();
      amountOk = !problem;
      amountInput.setAttribute('aria-invalid', problem ? 'true' : 'false');
      if (amountHelp) {
        amountHelp.textContent = problem ?? defaultHelp;
        amountHelp.classList.toggle('error', Boolean(problem));
      }
      renderWallets();
      if (problem) return;
      chosenAmount = amountInput.value.trim().replace(',', '.');
      amountText.textContent = `${chosenAmount} ${data.currency}`;
      const quoted = await fetchOffer();
      if ('problem' in quoted) say(quoted.problem);
      else say('');
    };
    amountInput.addEventListener('input', () => {
      clearTimeout(timer);
      timer = setTimeout(() => void update(), 400);
    });
    amountForm.addEventListener('submit', (event) => {
      event.preventDefault();
      clearTimeout(timer);
      void update();
    });
  }

  async function switchToBase(provider: Eip1193): Promise<void> {
    const current = await provider.request({ method: 'eth_chainId' });
    if (typeof current === 'string' && BigInt(current) === BigInt(chainHex)) return;
    say('Asking your wallet to switch to the Base network…');
    try {
      await provider.request({ method: 'wallet_switchEthereumChain', params: [{ chainId: chainHex }] });
    } catch (error) {
      if ((error as { code?: number }).code !== 4902) throw error;
      await provider.request({
        method: 'wallet_addEthereumChain',
        params: [
          {
            chainId: chainHex,
            chainName: 'Base',
            nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
            rpcUrls: [data.rpcUrl],
            blockExplorerUrls: ['https://basescan.org'],
          },
        ],
      });
    }
  }

  async function pay(wallet: Wallet): Promise<void> {
    if (busy || finished) return;
    busy = true;
    outcome.hidden = true;
    renderWallets();
    const { provider } = wallet;
    try {
      say(`Connecting to ${wallet.info.name}…`);
      const accounts = (await provider.request({ method: 'eth_requestAccounts' })) as string[];
      const from = accounts?.[0];
      if (!from) throw new Error('The wallet shared no account.');
      await switchToBase(provider);
      say('Getting the latest price…');
      const quoted = await fetchOffer();
      if ('paid' in quoted) return succeed(quoted.paid);
      if ('problem' in quoted) return fail(quoted.problem, false);
      const { offer } = quoted;
      const value = BigInt(offer.maxAmountRequired);
      say('Checking your USDC balance…');
      const balanceHex = await provider.request({
        method: 'eth_call',
        params: [{ to: offer.asset, data: `0x70a08231${from.slice(2).toLowerCase().padStart(64, '0')}` }, 'latest'],
      });
      const balance = BigInt(typeof balanceHex === 'string' && balanceHex !== '0x' ? balanceHex : '0x0');
      if (balance < value)
        return fail(
          `Your wallet holds ${usdcString(balance)} USDC on Base, and this payment needs ${usdcString(value)} USDC. Add USDC to your wallet, or choose another one, and try again.`,
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
      say('Confirming payment…');
      await submit(header);
    } catch (error) {
      const code = (error as { code?: number }).code;
      if (code === 4001) say('You declined in your wallet. Nothing was charged; you can try again.');
      else fail(`Your wallet reported a problem: ${(error as Error).message ?? String(error)}. Nothing was charged.`, false);
    } finally {
      busy = false;
      renderWallets();
    }
  }

  /** Sends the proof; a payment being settled is asked about again quietly until it resolves. */
  async function submit(header: string): Promise<void> {
    const started = Date.now();
    for (;;) {
      const response = await fetch(payUrl(), { headers: { 'x-payment': header, accept: 'application/json' } });
      const body = (await response.json().catch(() => ({}))) as Record<string, unknown>;
      if (response.status === 200) return succeed(body as unknown as Paid);
      if (response.status === 402 && body.error === 'payment_in_progress' && Date.now() - started < POLL_LIMIT_MS) {
        say('Confirming payment… the network is still settling it.');
        const wait = Number(response.headers.get('retry-after') ?? '5');
        await new Promise((resolve) => setTimeout(resolve, Math.min(Math.max(wait, 1), 30) * 1000));
        continue;
      }
      if (response.status === 402) {
        const code = String(body.error);
        const sentence = X402_SENTENCES[code as keyof typeof X402_SENTENCES] ?? String(body.message ?? 'The payment was refused.');
        if (REQUOTE_CODES.has(code)) await fetchOffer();
        return fail(sentence, code === 'payment_failed' || code === 'insufficient_funds' || code === 'invalid_signature');
      }
      return fail(httpProblem(response.status, body), response.status < 500 && response.status !== 429);
    }
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
    renderWallets();
    hint.hidden = true;
    cancel?.remove();
    amountForm?.querySelectorAll('input,button').forEach((el) => {
      (el as HTMLInputElement).disabled = true;
    });
    say('Paid. Thank you! Your receipt is ready.', false);
    outcome.className = 'outcome success';
    const receipt = `/checkout/v2/orders/receipt/${encodeURIComponent(paid.paymentId)}`;
    const text = document.createElement('p');
    text.textContent = 'Paid. Thank you! Your receipt is ready.';
    const actions = document.createElement('p');
    actions.className = 'actions';
    actions.append(link(receipt, 'View the receipt', 'button'));
    outcome.replaceChildren(text, actions);
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

  function fail(sentence: string, definitive: boolean): void {
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
