// Sandbox only (loaded by the page in sandbox mode): a wallet that needs no browser extension. A
// throwaway key made in this tab, funded from the sandbox faucet when it connects, signing locally,
// announced over EIP-6963 like any injected wallet. The key lives in memory and is gone on reload.
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { announceSandboxWallet, postSandbox } from '../../kit/sandbox-wallet.ts';

const FAUCET_USDC = '100';

announceSandboxWallet(
  { uuid: 'a4d7c0de-5a9d-4b0c-9c1e-5a9db0c1e5a9', name: 'Sandbox wallet (test USDC, no extension)', rdns: 'dev.till.sandbox' },
  async () => {
    const fresh = privateKeyToAccount(generatePrivateKey());
    await postSandbox('/sandbox/faucet', { address: fresh.address, usdc: FAUCET_USDC });
    return fresh;
  },
);
