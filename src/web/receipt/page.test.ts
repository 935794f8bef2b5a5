// The receipt (E4) as a browser and as an API client see it, with what the service logs meanwhile:
// a page view is one answer, never a page followed by a second attempt to answer JSON.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { pino } from 'pino';
import { type PayingShop, startPayingShop } from '../../testing/harness.ts';

/** Log lines at warn and above, as the operator's log would show them. */
const warnings: { level: number; msg: string; err?: { code?: string } }[] = [];
let shop: PayingShop;
let orderId = '';

before(async () => {
  const log = pino({ level: 'warn' }, { write: (line: string) => void warnings.push(JSON.parse(line)) });
  shop = await startPayingShop('sqlite', {}, { name: 'Receipt Shop', log });
  const { sessionId, payer, offer } = await shop.readyToPay({ amount: 0.5, currency: 'USD', orderId: 'receipt-1' });
  const response = await shop.pay(sessionId, (await shop.signedPayment(payer, offer)).header);
  const answer = (await response.json()) as { paymentId: string };
  assert.equal(response.status, 200, JSON.stringify(answer));
  orderId = answer.paymentId;
});
after(() => shop?.stop());

const view = (id: string, accept: string) => fetch(`${shop.baseUrl}/checkout/v2/orders/receipt/${id}`, { headers: { accept } });

test('a receipt viewed in a browser is one HTML page, and the service logs no warning for it', async () => {
  warnings.length = 0;
  const page = await view(orderId, 'text/html,application/xhtml+xml;q=0.9,*/*;q=0.8');
  assert.equal(page.status, 200);
  assert.match(page.headers.get('content-type') ?? '', /^text\/html/);
  const body = await page.text();
  assert.match(body, /^<!doctype html>/);
  assert.ok(body.includes(orderId), 'the page names the order');
  assert.ok(!body.includes('"publicOrderId"'), 'no JSON after the page');

  const missing = await view('TX-00000000000000000000000000000000', 'text/html');
  assert.equal(missing.status, 404);
  assert.match(await missing.text(), /Receipt not found/);

  const json = await view(orderId, 'application/json');
  assert.equal(json.status, 200);
  assert.equal(((await json.json()) as { publicOrderId: string }).publicOrderId, orderId);

  assert.deepEqual(
    warnings.map((line) => `${line.msg} ${line.err?.code ?? ''}`.trim()),
    [],
    'viewing receipts logs nothing at warn or above',
  );
});

test('the receipt says Paid, Partially refunded, Refunded or Reversed from what moved, never Paid after a refund', async () => {
  const { receiptStatus } = await import('./page.ts');
  const receipt = (await (await view(orderId, 'application/json')).json()) as Parameters<typeof receiptStatus>[0];
  const words = (changes: Partial<typeof receipt>) => receiptStatus({ ...receipt, ...changes }).words;
  assert.equal(receipt.tokenAmount, '0.50');
  assert.equal(words({}), 'Paid');
  assert.equal(words({ refundedTokenAmount: '0.10' }), 'Partially refunded');
  assert.equal(words({ refundedTokenAmount: '0.50' }), 'Refunded');
  assert.equal(words({ status: 'REVERSED' }), 'Reversed');
  const page = await (await view(orderId, 'text/html')).text();
  assert.match(page, /<th scope="row">Paid<\/th><td>0\.50 USDC on Base<\/td>/, 'the network as people name it');
  assert.match(page, /<th scope="row">Merchant(?:'|&#39;)s reference<\/th><td><code>receipt-1<\/code>/);
  assert.match(page, /class="note no-print"/, 'a printable page: the note is hidden when printed');
});
