// Test mode only (loaded by the refund form when the merchant's test payout wallet is the sandbox
// demo one, whose key the data folder holds for test money): the same kind of wallet as the hosted
// page's sandbox wallet, needing no browser extension, holding the demo payout key the page carries
// and signing the refund in the tab.
import { privateKeyToAccount } from 'viem/accounts';
import { announceSandboxWallet } from '../../kit/sandbox-wallet.ts';

const key = document.querySelector<HTMLElement>('[data-sandbox-payout-key]')?.dataset.sandboxPayoutKey;
if (key && /^0x[0-9a-fA-F]{64}$/.test(key))
  announceSandboxWallet(
    { uuid: 'b5e8d1ef-6b0e-4c1d-8d2f-6b0ec1d2f6b0', name: 'Sandbox demo payout wallet (test USDC, no extension)', rdns: 'dev.till.sandbox.payout' },
    async () => privateKeyToAccount(key as `0x${string}`),
  );
