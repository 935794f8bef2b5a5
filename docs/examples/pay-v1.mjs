// Pays a Till payment session with x402-fetch (x402 v1, X-PAYMENT header).
//   node docs/examples/pay-v1.mjs ps_…            (npm install x402-fetch viem)
// TILL: the service's base URL (default http://localhost:8080).
// BUYER_KEY: the buyer's private key (0x…). Without it, a new key is made and, in the sandbox,
// funded with 100 fake USDC from the faucet.
import { createWalletClient, http } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { base } from 'viem/chains';
import { decodeXPaymentResponse, wrapFetchWithPayment } from 'x402-fetch';

const TILL = process.env.TILL || 'http://localhost:8080';
const sessionId = process.argv[2];
if (!sessionId) throw new Error('usage: node pay-v1.mjs SESSION_ID');

const account = privateKeyToAccount(process.env.BUYER_KEY || generatePrivateKey());
if (!process.env.BUYER_KEY) {
  // Sandbox only: fake USDC for a buyer made on the spot.
  await fetch(`${TILL}/sandbox/faucet`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ address: account.address, usdc: '100' }),
  });
}

// In the sandbox the wallet talks to the sandbox chain; in production, to a Base RPC node.
const wallet = createWalletClient({ account, chain: base, transport: http(`${TILL}/sandbox/rpc`) });
// Third argument: the most this client pays, in USDC base units (x402-fetch's default is 0.1 USDC).
const pay = wrapFetchWithPayment(fetch, wallet, 100_000_000n);

const response = await pay(`${TILL}/x402/session/${sessionId}`);
console.log(response.status, JSON.stringify(await response.json()));
console.log('settlement:', JSON.stringify(decodeXPaymentResponse(response.headers.get('x-payment-response'))));
