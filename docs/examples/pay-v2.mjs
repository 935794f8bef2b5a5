// Pays a Till payment session with @x402/fetch (x402 v2, PAYMENT-SIGNATURE header).
//   node docs/examples/pay-v2.mjs ps_…            (npm install @x402/fetch @x402/evm viem)
// TILL: the service's base URL (default http://localhost:8080).
// BUYER_KEY: the buyer's private key (0x…). Without it, a new key is made and, in the sandbox,
// funded with 100 fake USDC from the faucet.
import { ExactEvmScheme } from '@x402/evm/exact/client';
import { wrapFetchWithPaymentFromConfig } from '@x402/fetch';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';

const TILL = process.env.TILL || 'http://localhost:8080';
const SANDBOX_USDC = '0xae47EB9b9c9E6903b1e91C471308F98b5d2C3049';
const sessionId = process.argv[2];
if (!sessionId) throw new Error('usage: node pay-v2.mjs SESSION_ID');

const account = privateKeyToAccount(process.env.BUYER_KEY || generatePrivateKey());
if (!process.env.BUYER_KEY) {
  // Sandbox only: fake USDC for a buyer made on the spot.
  await fetch(`${TILL}/sandbox/faucet`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ address: account.address, usdc: '100' }),
  });
}

const pay = wrapFetchWithPaymentFromConfig(fetch, {
  schemes: [{ network: 'eip155:8453', client: new ExactEvmScheme(account) }],
  // The sandbox token is not one of @x402/fetch's default assets: allow it. In production, drop
  // this; Base USDC is a default asset, capped per payment by spendControls.maxAmountPerPayment.
  spendControls: { allowedAssets: [{ network: 'eip155:8453', asset: SANDBOX_USDC }] },
});

const response = await pay(`${TILL}/x402/session/${sessionId}`);
console.log(response.status, JSON.stringify(await response.json()));
console.log('settlement:', Buffer.from(response.headers.get('payment-response') ?? '', 'base64').toString());
