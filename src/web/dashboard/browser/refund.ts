// The refund form of an order (Orders narrowed to one order): connects the payout wallet (EIP-6963),
// asks the service for the typed data of the refund, has the wallet sign it (eth_signTypedData_v4)
// and posts the signed refund; the service checks it, settles it and sends the page back to Orders.
// A refusal is shown as every dashboard form shows one: an alert, and the field it names marked.
import { discoverWallets, switchToChain, type Wallet } from '../../kit/wallets.ts';

type Prepared = { typedData: { domain: { chainId: number }; message: { from: string; validBefore: string; nonce: string } } };
type Refusal = { error?: { message?: string; field?: string } };

/** The sandbox demo payout wallet (test mode, web/dashboard/browser/sandbox-payout-wallet.ts): the one to sign with when it is offered. */
const SANDBOX_PAYOUT_RDNS = 'dev.till.sandbox.payout';

/** The fields a refusal may name that the merchant can see and correct, with their labels. */
const VISIBLE_FIELDS: Record<string, string> = { amount: 'Amount', reason: 'Reason' };

export function startRefundForm(form: HTMLFormElement): void {
  const say = form.querySelector<HTMLElement>('[data-refund-say]');
  const alert = form.querySelector<HTMLElement>('[data-refund-problem]');
  const button = form.querySelector<HTMLButtonElement>('button[type="submit"]');
  const tell = (text: string) => {
    if (say) say.textContent = text;
  };
  const field = (name: string) => form.elements.namedItem(name) as HTMLInputElement;

  /** Clears a refusal: the alert and every field's mark. */
  const clearProblem = () => {
    if (alert) {
      alert.hidden = true;
      alert.textContent = '';
    }
    for (const name of Object.keys(VISIBLE_FIELDS)) {
      const input = field(name);
      input.removeAttribute('aria-invalid');
      document.getElementById(`${input.id}-problem`)?.remove();
      const described = (input.getAttribute('aria-describedby') ?? '')
        .split(' ')
        .filter((id) => id && id !== `${input.id}-problem`)
        .join(' ');
      if (described) input.setAttribute('aria-describedby', described);
      else input.removeAttribute('aria-describedby');
    }
  };

  /**
   * A refusal, in red: in the alert above the fields, and when it names a field the merchant can
   * correct, under that field too, tied to it and focused. The status line goes quiet.
   */
  const refuse = (message: string, fieldName?: string) => {
    clearProblem();
    tell('');
    const label = fieldName ? VISIBLE_FIELDS[fieldName] : undefined;
    // The service names the field by its name ("amount is more than …"); people read its label.
    const sentence = label && message.startsWith(`${fieldName} `) ? `${label} ${message.slice(fieldName!.length + 1)}` : message;
    const text = /[.!?]$/.test(sentence) ? sentence : `${sentence}.`;
    if (alert) {
      alert.textContent = text;
      alert.hidden = false;
    }
    if (!label || !fieldName) return;
    const input = field(fieldName);
    const problem = document.createElement('span');
    problem.id = `${input.id}-problem`;
    problem.className = 'field-problem';
    problem.textContent = text;
    input.after(problem);
    input.setAttribute('aria-invalid', 'true');
    input.setAttribute('aria-describedby', [input.getAttribute('aria-describedby'), problem.id].filter(Boolean).join(' '));
    input.focus();
  };

  let wallets: Wallet[] = [];
  /** The wallet that signs: the sandbox demo payout wallet when the page offers it, else the first found. */
  const signer = () => wallets.find((w) => w.info.rdns === SANDBOX_PAYOUT_RDNS) ?? wallets[0];
  const NO_WALLET = 'No browser wallet was found: install one holding the payout wallet to sign refunds';
  // Set while a refund is being prepared, signed or sent: what discovery finds meanwhile is kept for
  // the next refund but never touches the status line or the button, so a refusal stays on screen
  // and the button stays disabled until the answer is in.
  let submitting = false;
  const offerWallets = () => {
    if (button) button.disabled = wallets.length === 0;
    // A refusal on screen stays what the merchant reads until the next try.
    if (alert && !alert.hidden) return;
    tell(wallets.length ? `Signing with ${signer()!.info.name}.` : `${NO_WALLET}.`);
  };
  // The button waits for a wallet: without this script or a wallet, nothing could be signed.
  discoverWallets((found) => {
    wallets = found;
    if (!submitting) offerWallets();
  });
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    const wallet = signer();
    if (!wallet) return refuse(NO_WALLET);
    if (submitting) return;
    submitting = true;
    clearProblem();
    if (button) button.disabled = true;
    try {
      tell('Preparing the refund…');
      const body = new URLSearchParams({ csrf: field('csrf').value, amount: field('amount').value });
      const prepared = await fetch(form.dataset.refundPrepare ?? '', { method: 'POST', body, credentials: 'same-origin' });
      const answer = (await prepared.json().catch(() => ({}))) as Prepared & Refusal;
      if (!prepared.ok) return refuse(answer.error?.message ?? `The refund could not be prepared (${prepared.status})`, answer.error?.field);
      tell(`Connecting to ${wallet.info.name}…`);
      const accounts = (await wallet.provider.request({ method: 'eth_requestAccounts' })) as string[];
      const from = accounts.find((a) => a.toLowerCase() === answer.typedData.message.from.toLowerCase());
      if (!from) return refuse(`Connect the payout wallet ${answer.typedData.message.from}: the refund is paid by the wallet that received the payment`);
      // Wallets sign typed data only for the chain they are on: the domain's, Base.
      const chainHex = `0x${answer.typedData.domain.chainId.toString(16)}`;
      await switchToChain(wallet.provider, chainHex, form.dataset.rpcUrl ?? '', tell);
      tell('Sign the refund in your wallet…');
      const signature = (await wallet.provider.request({ method: 'eth_signTypedData_v4', params: [from, JSON.stringify(answer.typedData)] })) as string;
      field('validBefore').value = answer.typedData.message.validBefore;
      field('nonce').value = answer.typedData.message.nonce;
      field('signature').value = signature;
      tell('Sending the refund…');
      const posted = await fetch(form.action, {
        method: 'POST',
        body: new URLSearchParams(new FormData(form) as unknown as Record<string, string>),
        credentials: 'same-origin',
      });
      if (posted.redirected || posted.ok) {
        window.location.assign(posted.url);
        return;
      }
      const refused = (await posted.json().catch(() => ({}))) as Refusal;
      refuse(refused.error?.message ?? `The refund was refused (${posted.status})`, refused.error?.field);
    } catch (error) {
      refuse(`The refund was not sent: ${(error as Error).message ?? 'the wallet refused'}`);
    } finally {
      submitting = false;
      if (button) button.disabled = wallets.length === 0;
    }
  });
}
