// What a developer would pick instead of Till: the official @x402/express middleware guarding one
// static-price route, GET /item, paid to PAY_TO in USDC_ADDRESS through the facilitator at
// FACILITATOR_URL, nothing else. PRICE_UNITS (10 000 unless given) and TIMEOUT_S (60) set the
// price and the requirement's maxTimeoutSeconds; listens on 127.0.0.1:PORT.
import { HTTPFacilitatorClient } from '@x402/core/server';
import { ExactEvmScheme } from '@x402/evm/exact/server';
import { paymentMiddleware, x402ResourceServer } from '@x402/express';
import express from 'express';

const resourceServer = new x402ResourceServer(new HTTPFacilitatorClient({ url: process.env.FACILITATOR_URL! })).register('eip155:8453', new ExactEvmScheme());
const app = express();
app.use(
  paymentMiddleware(
    {
      'GET /item': {
        accepts: {
          scheme: 'exact',
          network: 'eip155:8453',
          payTo: process.env.PAY_TO!,
          price: { amount: process.env.PRICE_UNITS ?? '10000', asset: process.env.USDC_ADDRESS!, extra: { name: 'USD Coin', version: '2' } },
          maxTimeoutSeconds: Number(process.env.TIMEOUT_S ?? 60),
        },
        description: 'Benchmark item',
        mimeType: 'application/json',
      },
    },
    resourceServer,
  ),
);
app.get('/item', (_request, response) => void response.json({ item: 'paid' }));
app.listen(Number(process.env.PORT), '127.0.0.1');
