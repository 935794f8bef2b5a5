// The dashboard's orders: filters, cursor pages, the CSV export and its escaping, and one merchant's
// orders out of another's sight.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { createUser } from '../../accounts/users.ts';
import { recordReversal } from '../../payments/payments.ts';
import { describeOnEngine, engines, type PayingShop, startPayingShop } from '../../testing/harness.ts';
import { Browser, signedInMerchant } from '../../testing/page-browser.ts';
import { csvCell, toCsvLine } from './csv.ts';

test('CSV cells are quoted when needed and never start a formula', () => {
  assert.equal(csvCell('plain'), 'plain');
  assert.equal(csvCell('a,b'), '"a,b"');
  assert.equal(csvCell('say "hi"'), '"say ""hi"""');
  assert.equal(csvCell('two\nlines'), '"two\nlines"');
  assert.equal(csvCell('=HYPERLINK("http://x")'), `"'=HYPERLINK(""http://x"")"`);
  for (const start of ['+', '-', '@', '\t', '\r']) assert.ok(csvCell(`${start}1`).replace(/^"/, '').startsWith(`'${start}`), JSON.stringify(start));
  assert.equal(toCsvLine(['a', 'b']), 'a,b\r\n');
});

for (const { engine, skip } of engines) {
  describeOnEngine(`the dashboard's orders on ${engine}`, skip, () => {
    let env: PayingShop;
    let browser: Browser;
    const paid: { sessionId: string; paymentId: string; orderId: string }[] = [];

    before(async () => {
      env = await startPayingShop(engine, {}, { name: 'Coffee Shop' });
      for (const orderId of ['order-1', '=SUM(A1:A9)', 'order,3']) {
        const { sessionId, payer, offer } = await env.readyToPay({
          amount: 0.01,
          currency: 'USD',
          orderId,
          ...(orderId === 'order,3' ? { concept: 'Beans, 1 kg' } : {}),
        });
        const response = await env.pay(sessionId, (await env.signedPayment(payer, offer)).header);
        const answer = await response.json();
        assert.equal(response.status, 200, JSON.stringify(answer));
        paid.push({ sessionId, paymentId: answer.paymentId, orderId });
        // On the clock: the next payment settles at a later millisecond, so newest-first is a known order.
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
      const first = await env.service.context.db
        .selectFrom('payments')
        .select(['id', 'session_id'])
        .where('public_order_id', '=', paid[0]!.paymentId)
        .executeTakeFirstOrThrow();
      await recordReversal(env.service.context, first, { now: Date.now(), explorerTxUrl: env.service.config.explorerTxUrl, network: 'base' });
      const email = `orders-${engine}-${Date.now()}@shop.example`;
      await createUser(env.service.context.db, { merchantId: env.merchantId, email, password: 'correct horse battery staple' });
      browser = new Browser(env.service);
      assert.equal((await browser.signIn(email, 'correct horse battery staple')).statusCode, 303);
    });
    after(() => env?.stop());

    const idsIn = (html: string) => [...html.matchAll(/<code>(TX-[0-9A-F]{32})<\/code>/g)].map((m) => m[1]);

    test('signed out, orders and their CSV send the browser to sign in', async () => {
      for (const url of ['/dashboard/orders', '/dashboard/orders.csv']) assert.equal((await new Browser(env.service).request('GET', url)).statusCode, 303, url);
    });

    test('the list shows every settled order newest first, with its receipt and explorer links', async () => {
      const answer = await browser.request('GET', '/dashboard/orders');
      assert.equal(answer.statusCode, 200);
      assert.deepEqual(
        idsIn(answer.body),
        [...paid].reverse().map((p) => p.paymentId),
      );
      for (const { paymentId } of paid) assert.ok(answer.body.includes(`href="/checkout/v2/orders/receipt/${paymentId}"`));
      const tx = await env.service.context.db
        .selectFrom('payments')
        .select('tx_hash')
        .where('public_order_id', '=', paid[2]!.paymentId)
        .executeTakeFirstOrThrow();
      assert.ok(answer.body.includes(env.service.config.explorerTxUrl.replace('{hash}', tx.tx_hash!)));
      assert.match(answer.body, /Reversed/);
      assert.ok(answer.body.includes('Your id: =SUM(A1:A9)'));
      assert.ok(answer.body.includes('<td data-label="For">Beans, 1 kg</td>'), 'what was paid for');
      assert.equal(answer.body.match(/<td data-label="For"><\/td>/g)?.length, 2, 'empty without a concept');
    });

    test('filters: status, session, order id, TX- id in any case, dates', async () => {
      const ids = async (query: string) => idsIn((await browser.request('GET', `/dashboard/orders?${query}`)).body);
      assert.deepEqual(await ids('status=REVERSED'), [paid[0]!.paymentId]);
      assert.deepEqual(await ids('status=SUCCESS'), [paid[2]!.paymentId, paid[1]!.paymentId]);
      assert.deepEqual(await ids(`session=${paid[1]!.sessionId}`), [paid[1]!.paymentId]);
      assert.deepEqual(await ids(`q=${encodeURIComponent('order,3')}`), [paid[2]!.paymentId]);
      assert.deepEqual(await ids(`q=${paid[1]!.paymentId.toLowerCase()}`), [paid[1]!.paymentId]);
      const today = new Date().toISOString().slice(0, 10);
      assert.equal((await ids(`from=${today}&to=${today}`)).length, 3);
      assert.deepEqual(await ids('to=2020-01-01'), []);
      assert.deepEqual(await ids('q=nothing-like-this'), []);
    });

    test('cursor pages walk the whole list without repeating', async () => {
      const size = 50;
      assert.ok(size > paid.length); // one page here; the cursor itself is checked with a forged one below
      const bad = await browser.request('GET', '/dashboard/orders?after=garbage');
      assert.equal(bad.statusCode, 400);
      assert.match(bad.body, /Page is not a page of this list/);
      const tx = await env.service.context.db
        .selectFrom('payments')
        .select(['id', 'settled_at'])
        .where('public_order_id', '=', paid[2]!.paymentId)
        .executeTakeFirstOrThrow();
      const older = await browser.request('GET', `/dashboard/orders?after=${tx.settled_at}.${tx.id}`);
      assert.deepEqual(idsIn(older.body), [paid[1]!.paymentId, paid[0]!.paymentId]);
      assert.match(older.body, /href="\/dashboard\/orders">Newest<\/a>/);
    });

    test('a filter field that cannot be read is named, and the CSV refused the same way', async () => {
      for (const [query, text] of [
        ['status=PENDING', /Status must be Paid, Reversed or All/],
        ['from=2024-02-31', /From must be a date written YYYY-MM-DD/],
        ['from=2024-03-02&to=2024-03-01', /To must be the same day as From or later/],
        ['session=%3Cscript%3E', /Session must be a payment session id/],
      ] as const) {
        for (const path of ['/dashboard/orders', '/dashboard/orders.csv']) {
          const answer = await browser.request('GET', `${path}?${query}`);
          assert.equal(answer.statusCode, 400, `${path}?${query}`);
          assert.match(answer.body, text);
          assert.match(answer.body, /aria-invalid="true"/);
        }
      }
    });

    test('the CSV holds the current filter, escaped, formula cells defused', async () => {
      const answer = await browser.request('GET', '/dashboard/orders.csv?status=SUCCESS');
      assert.equal(answer.statusCode, 200);
      assert.match(answer.headers['content-type'] as string, /^text\/csv/);
      assert.match(answer.headers['content-disposition'] as string, /^attachment; filename="orders-\d{4}-\d{2}-\d{2}\.csv"$/);
      const lines = answer.body.split('\r\n');
      assert.equal(
        lines[0],
        'paid_at,public_order_id,status,order_id,payment_session_id,amount,currency,token_amount,token,network,transaction_hash,explorer_url,receipt_url,refunded_token_amount,concept',
      );
      assert.equal(lines.length, 4); // header, two orders, the empty string after the last CRLF
      assert.ok(lines[1]!.includes(`${paid[2]!.paymentId},SUCCESS,"order,3",${paid[2]!.sessionId},0.01,USD,0.01,USDC,base,0x`));
      assert.ok(lines[1]!.endsWith(',"Beans, 1 kg"'), lines[1]);
      assert.ok(lines[2]!.includes(`,SUCCESS,'=SUM(A1:A9),`));
      assert.ok(lines[2]!.endsWith(','), 'an empty concept');
      assert.ok(lines[2]!.includes(`/checkout/v2/orders/receipt/${paid[1]!.paymentId}`));
      const all = await browser.request('GET', '/dashboard/orders.csv');
      assert.equal(all.body.split('\r\n').length, 5);
    });

    test('another merchant’s user sees none of these orders, by list, filter, search or CSV', async () => {
      const other = await signedInMerchant(env.service);
      const list = await other.browser.request('GET', '/dashboard/orders');
      assert.deepEqual(idsIn(list.body), []);
      assert.match(list.body, /No paid order yet/);
      for (const query of [`session=${paid[1]!.sessionId}`, `q=${paid[1]!.paymentId}`, 'q=order-1'])
        assert.deepEqual(idsIn((await other.browser.request('GET', `/dashboard/orders?${query}`)).body), [], query);
      const csv = await other.browser.request('GET', '/dashboard/orders.csv');
      assert.equal(csv.body.split('\r\n').length, 2);
    });
  });
}
