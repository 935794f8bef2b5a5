// The refund form of an order (Orders narrowed to one order): connects the payout wallet (EIP-6963),
// asks the service for the typed data of the refund, has the wallet sign it (eth_signTypedData_v4)
// and posts the signed refund; the service checks it, settles it and sends the page back to Orders.
import { discoverWallets, switchToChain, type Wallet } from '../../kit/wallets.ts';

type Prepared = { typedData: { domain: { chainId: number }; message: { from: string; validBefore: string; nonce: string } } };

export function startRefundForm(form: HTMLFormElement): void {
  const say = form.querySelector<HTMLElement>('[data-refund-say]');
  const button = form.querySelector<HTMLButtonElement>('button[type="submit"]');
  const tell = (text: string) => {
    if (say) say.textContent = text;
  };
  let wallets: Wallet[] = [];
  // Set while a refund is being prepared, signed or sent: what discovery finds meanwhile is kept for
  // the next refund but never touches the status line or the button, so a refusal stays on screen
  // and the button stays disabled until the answer is in.
  let submitting = false;
  const offerWallets = () => {
    if (button) button.disabled = wallets.length === 0;
    tell(wallets.length ? `Signing with ${wallets[0]!.info.name}.` : 'No browser wallet was found: install one holding the payout wallet to sign refunds.');
  };
  // The button waits for a wallet: without this script or a wallet, nothing could be signed.
  discoverWallets((found) => {
    wallets = found;
    if (!submitting) offerWallets();
  });
  const field = (name: string) => form.elements.namedItem(name) as HTMLInputElement;
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    const wallet = wallets[0];
    if (!wallet) return tell('No browser wallet was found: install one holding the payout wallet to sign refunds.');
    if (submitting) return;
    submitting = true;
    if (button) button.disabled = true;
    try {
      const body = new URLSearchParams({ csrf: field('csrf').value, amount: field('amount').value });
      const prepared = await fetch(form.dataset.refundPrepare ?? '', { method: 'POST', body, credentials: 'same-origin' });
      const answer = (await prepared.json()) as Prepared & { error?: { message: string } };
      if (!prepared.ok) return tell(answer.error?.message ?? `The refund could not be prepared (${prepared.status}).`);
      tell(`Connecting to ${wallet.info.name}…`);
      const accounts = (await wallet.provider.request({ method: 'eth_requestAccounts' })) as string[];
      const from = accounts.find((a) => a.toLowerCase() === answer.typedData.message.from.toLowerCase());
      if (!from) return tell(`Connect the payout wallet ${answer.typedData.message.from}: the refund is paid by the wallet that received the payment.`);
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
      const refused = (await posted.json().catch(() => ({}))) as { error?: { message?: string } };
      tell(refused.error?.message ?? `The refund was refused (${posted.status}).`);
    } catch (error) {
      tell(`The refund was not sent: ${(error as Error).message ?? 'the wallet refused'}.`);
    } finally {
      submitting = false;
      if (button) button.disabled = wallets.length === 0;
    }
  });
}
