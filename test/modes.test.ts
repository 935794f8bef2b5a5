// Modes as data: a live service and a sandbox service on one database. Every session, payment,
// webhook endpoint and event records the mode it was made in; the live service never serves, pays
// or delivers what the sandbox made; an http endpoint is never sent to in live; `till live prepare`
// archives the open sandbox sessions and removes the demo user, after which a live start has
// nothing left in its way.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { after, before, test } from 'node:test';
import { pino } from 'pino';
import { startUserSession } from '../src/accounts/user-sessions.ts';
import { findUserByEmail } from '../src/accounts/users.ts';
import { DEMO_USER_EMAIL } from '../src/cli/demo.ts';
import { liveReadiness, prepareForLive } from '../src/cli/live.ts';
import { createDemoMerchant } from '../src/cli/serve.ts';
import { loadConfig } from '../src/config.ts';
import type { Db } from '../src/db/index.ts';
import { createService, type Service } from '../src/main.ts';
import { createApiKey } from '../src/merchants/api-keys.ts';
import { createMerchant, findMerchant } from '../src/merchants/merchants.ts';
import { createClient } from '../src/oauth/clients.ts';
import { issueGrantSecret } from '../src/oauth/grant-secrets.ts';
import { addConsent } from '../src/oauth/grants.ts';
import { listPaidOrders } from '../src/payments/receipts.ts';
import { expireDueSessions } from '../src/sessions/expiry.ts';
import { countPayableSandboxSessions } from '../src/sessions/sessions.ts';
import { runNodeScript } from '../src/testing/child-process.ts';
import { sandboxSettings } from '../src/testing/environment.ts';
import { describeOnEngine, engines, type PayingShop, startPayingShop } from '../src/testing/harness.ts';
import { newAccount } from '../src/testing/payer.ts';
import { challenge, createSession, pay, readSession, SESSIONS_PATH, sessionRequest, signedPayment } from '../src/testing/shop.ts';
import { waitFor } from '../src/testing/wait.ts';
import { createDeliveryStore } from '../src/webhooks/delivery-store.ts';
import { getWebhook, setWebhook } from '../src/webhooks/endpoints.ts';
import { startReceiver } from '../src/webhooks/fixtures/receiver.ts';
import { startWebhookWorker } from '../src/webhooks/worker.ts';

const CLI = resolve(import.meta.dirname, '../src/cli/main.ts');
const UNKNOWN_SESSION = 'ps_NoSuchSessionAnywhere0000';

for (const { engine, skip } of engines) {
  describeOnEngine(`modes as data on one database: a test-only and a live-only deployment (${engine})`, skip, () => {
    let shop: PayingShop;
    let live: Service;
    let liveUrl: string;
    let liveKey: string;
    let hook: Awaited<ReturnType<typeof startReceiver>>;
    /** Made in the sandbox: an open session, a paid one and its public order id. */
    let sandboxOpen: string;
    let sandboxPaid: string;
    let sandboxOrder: string;
    const db = (): Db => shop.service.context.db;
    const modeOf = async (table: 'payment_sessions' | 'payments' | 'webhook_events', column: 'id' | 'session_id', value: string) =>
      (await db().selectFrom(table).select('mode').where(column, '=', value).execute()).map((row) => row.mode);

    before(async () => {
      hook = await startReceiver();
      shop = await startPayingShop(engine, { TILL_WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' }, { name: 'Two-mode shop' });
      await setWebhook(db(), shop.service.config.secretKey, shop.merchantId, { url: hook.url }, 'sandbox');
      sandboxOpen = await shop.createSession({ amount: 5, currency: 'USD', orderId: 'order-1' });
      const ready = await shop.readyToPay({ amount: 0.01, currency: 'USD', orderId: 'order-2' });
      const paid = await shop.pay(ready.sessionId, (await shop.signedPayment(ready.payer, ready.offer)).header);
      assert.equal(paid.status, 200, await paid.clone().text());
      sandboxPaid = ready.sessionId;
      sandboxOrder = ((await paid.json()) as { paymentId: string }).paymentId;

      // The same database, now served in live mode (a facilitator and no TILL_SANDBOX), on the same chain.
      const { TILL_FACILITATOR_URL, TILL_BASE_RPC_URL, TILL_USDC_ADDRESS } = sandboxSettings(shop.sandbox);
      const { config } = shop.service;
      const liveConfig = loadConfig({
        TILL_DATABASE_URL: config.databaseUrl,
        TILL_DATA_DIR: config.dataDir,
        TILL_SECRET_KEY: config.secretKey.toString('hex'),
        TILL_LOG_LEVEL: 'silent',
        PORT: '0',
        TILL_BASE_URL: 'https://till.test',
        // The sandbox's facilitator and chain, on this machine over http.
        TILL_DEV_ALLOW_HTTP_LOOPBACK: 'true',
        TILL_FACILITATOR_URL: TILL_FACILITATOR_URL!,
        TILL_BASE_RPC_URL: TILL_BASE_RPC_URL!,
        TILL_USDC_ADDRESS: TILL_USDC_ADDRESS!,
        TILL_WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
        // A live-only deployment: test mode, beside live, is test/test-and-live.test.ts's.
        TILL_MODES: 'live',
      });
      assert.equal(liveConfig.mode, 'live');
      live = await createService(liveConfig, { workers: false, log: pino({ level: 'silent' }) });
      liveUrl = await live.app.listen({ port: 0, host: '127.0.0.1' });
      liveKey = (await createApiKey(db(), shop.merchantId, 'live')).apiKey;
    });
    after(async () => {
      await live?.close();
      await shop?.stop();
      await hook?.close();
    });

    test('every new session, payment, endpoint and event records the mode it was made in', async () => {
      assert.deepEqual(await modeOf('payment_sessions', 'id', sandboxOpen), ['sandbox']);
      assert.deepEqual(await modeOf('payments', 'session_id', sandboxPaid), ['sandbox']);
      assert.deepEqual([...new Set(await modeOf('webhook_events', 'session_id', sandboxPaid))], ['sandbox']);

      // An orderId used in the sandbox is free in live; the live session is paid through the live service.
      const liveSession = await createSession(liveUrl, liveKey, { amount: 0.01, currency: 'USD', orderId: 'order-2' });
      assert.deepEqual(await modeOf('payment_sessions', 'id', liveSession), ['live']);
      const payer = await shop.fundedPayer();
      const offer = await challenge(liveUrl, liveSession);
      const paid = await pay(liveUrl, liveSession, (await signedPayment(payer, shop.sandbox.usdcAddress, offer)).header);
      assert.equal(paid.status, 200, await paid.clone().text());
      assert.deepEqual(await modeOf('payments', 'session_id', liveSession), ['live']);
      assert.deepEqual([...new Set(await modeOf('webhook_events', 'session_id', liveSession))], ['live']);
      // The merchant's endpoint was saved in the sandbox: the live events queued nothing for it.
      const liveEvents = await db().selectFrom('webhook_events').select('id').where('session_id', '=', liveSession).execute();
      assert.ok(liveEvents.length > 0);
      const queued = await db()
        .selectFrom('webhook_deliveries')
        .select('id')
        .where(
          'event_id',
          'in',
          liveEvents.map((event) => event.id),
        )
        .execute();
      assert.deepEqual(queued, []);
      // Each service lists the orders of its own mode.
      assert.deepEqual(
        (await listPaidOrders(db(), 'live', shop.merchantId)).orders.map((order) => order.paymentSessionId),
        [liveSession],
      );
      assert.deepEqual(
        (await listPaidOrders(db(), 'sandbox', shop.merchantId)).orders.map((order) => order.paymentSessionId),
        [sandboxPaid],
      );

      // A merchant has an endpoint per mode: one saved in live is another endpoint, with its own URL, key and secret.
      const other = await createMerchant(db(), { name: 'Endpoint owner' });
      const sandboxSecrets = await setWebhook(db(), shop.service.config.secretKey, other.id, { url: 'http://127.0.0.1:9/hook' }, 'sandbox');
      const endpointModes = async () =>
        (await db().selectFrom('webhook_endpoints').select('mode').where('merchant_id', '=', other.id).orderBy('mode').execute()).map((row) => row.mode);
      assert.deepEqual(await endpointModes(), ['sandbox']);
      assert.equal(await getWebhook(db(), shop.service.config.secretKey, other.id, 'live'), undefined, 'live mode sees no test endpoint');
      const liveSecrets = await setWebhook(db(), shop.service.config.secretKey, other.id, { url: 'https://shop.example/hook' }, 'live');
      assert.deepEqual(await endpointModes(), ['live', 'sandbox']);
      assert.notEqual(liveSecrets.webhookKey, sandboxSecrets.webhookKey);
      assert.notEqual(liveSecrets.signingSecret, sandboxSecrets.signingSecret);
      const [liveEndpoint, sandboxEndpoint] = await Promise.all(
        (['live', 'sandbox'] as const).map((mode) => getWebhook(db(), shop.service.config.secretKey, other.id, mode)),
      );
      assert.equal(liveEndpoint?.url, 'https://shop.example/hook');
      assert.equal(sandboxEndpoint?.url, 'http://127.0.0.1:9/hook', 'the test endpoint is left as it was');
      assert.equal(sandboxEndpoint?.webhookKey, sandboxSecrets.webhookKey);
    });

    test('a live service answers a sandbox session 404, as an unknown one: E3 (both paths), the hosted page, E2, the read; its receipt too', async () => {
      for (const path of ['/x402/session/', '/checkout/v2/x402/session/']) {
        const unknown = await fetch(`${liveUrl}${path}${UNKNOWN_SESSION}`);
        const sandbox = await fetch(`${liveUrl}${path}${sandboxOpen}`);
        assert.equal(sandbox.status, 404);
        assert.equal(unknown.status, 404);
        assert.deepEqual(await sandbox.json(), JSON.parse((await unknown.text()).replaceAll(UNKNOWN_SESSION, sandboxOpen)));
        // Asked again (the challenge cache has nothing of it either), and paid the sandbox service still offers it.
        assert.equal((await fetch(`${liveUrl}${path}${sandboxOpen}`)).status, 404);
        assert.equal((await fetch(`${shop.baseUrl}${path}${sandboxOpen}`)).status, 402);
      }
      const page = await fetch(`${liveUrl}/checkout/pay?uid=${sandboxOpen}`);
      assert.equal(page.status, 404);
      assert.match(await page.text(), /<h1>Payment not found<\/h1>/);
      assert.equal((await fetch(`${shop.baseUrl}/checkout/pay?uid=${sandboxOpen}`)).status, 200);

      const update = await sessionRequest(liveUrl, liveKey, 'PUT', { sessionId: sandboxOpen, amount: 6, currency: 'USD' });
      assert.equal(update.status, 404, await update.text());
      assert.equal((await readSession(liveUrl, liveKey, sandboxOpen)).status, 404);
      assert.equal((await readSession(shop.baseUrl, shop.apiKey, sandboxOpen)).status, 200);
      assert.equal((await fetch(`${liveUrl}/checkout/v2/orders/receipt/${sandboxOrder}`)).status, 404);
      assert.equal((await fetch(`${shop.baseUrl}/checkout/v2/orders/receipt/${sandboxOrder}`)).status, 200);
      // An Idempotency-Key used in the sandbox is a new key in live: it never replays the sandbox's session.
      const body = { amount: 7, currency: 'USD' };
      const first = await sessionRequest(shop.baseUrl, shop.apiKey, 'POST', body, { 'idempotency-key': 'checkout-77' });
      const again = await sessionRequest(liveUrl, liveKey, 'POST', body, { 'idempotency-key': 'checkout-77' });
      assert.deepEqual([first.status, again.status], [201, 201]);
      const [sandboxMade, liveMade] = [((await first.json()) as { sessionId: string }).sessionId, ((await again.json()) as { sessionId: string }).sessionId];
      assert.notEqual(liveMade, sandboxMade);
      assert.deepEqual(await modeOf('payment_sessions', 'id', liveMade), ['live']);
      const replayed = await sessionRequest(liveUrl, liveKey, 'POST', body, { 'idempotency-key': 'checkout-77' });
      assert.equal(((await replayed.json()) as { sessionId: string }).sessionId, liveMade);
      // The sandbox service sees no live session either.
      const liveSession = await createSession(liveUrl, liveKey, { amount: 1, currency: 'USD' });
      assert.equal((await fetch(`${shop.baseUrl}/x402/session/${liveSession}`)).status, 404);
      assert.equal((await fetch(`${liveUrl}/x402/session/${liveSession}`)).status, 402);
      assert.equal(
        (await shop.service.app.inject({ method: 'GET', url: `${SESSIONS_PATH}/${liveSession}`, headers: { 'x-sc-apikey': shop.apiKey } })).statusCode,
        404,
      );
    });

    test('live background work leaves the sandbox alone: its sweep expires no sandbox session, its worker leases no sandbox delivery', async () => {
      const pendingSandbox = await db()
        .selectFrom('webhook_deliveries')
        .select('id')
        .where('merchant_id', '=', shop.merchantId)
        .where('status', '=', 'PENDING')
        .execute();
      assert.ok(pendingSandbox.length > 0, 'the sandbox payment queued deliveries to the sandbox endpoint');
      const expiring = await shop.createSession({ amount: 2, currency: 'USD' });
      const far = Date.now() + 365 * 86_400_000;
      await expireDueSessions(live.context, far);
      const status = await db().selectFrom('payment_sessions').select('status').where('id', '=', expiring).executeTakeFirstOrThrow();
      assert.equal(status.status, 'OPEN');

      const leased = await createDeliveryStore(live.context, 60_000).claimDue(100, new Set());
      assert.deepEqual(leased, { ready: [], unreadable: [] });
      assert.equal(hook.received.length, 0);

      // The sandbox's own worker delivers them, and only sandbox sessions' events reach its endpoint.
      const sandboxSessions = new Set((await db().selectFrom('payment_sessions').select('id').where('mode', '=', 'sandbox').execute()).map((row) => row.id));
      const worker = startWebhookWorker(shop.service.context, { settings: { ...shop.service.config.webhooks, retrySchedule: [] } });
      try {
        await waitFor(async () => {
          const left = await db()
            .selectFrom('webhook_deliveries')
            .select('id')
            .where(
              'id',
              'in',
              pendingSandbox.map((row) => row.id),
            )
            .where('status', '=', 'PENDING')
            .execute();
          return left.length === 0;
        }, 'the sandbox deliveries');
      } finally {
        await worker.stop();
      }
      assert.ok(hook.received.length >= pendingSandbox.length);
      for (const received of hook.received) assert.ok(sandboxSessions.has(JSON.parse(received.body).paymentSessionId));
    });

    test('in live, an http endpoint saved before is never sent to: the delivery fails at once and says why', async () => {
      const plain = await startReceiver();
      try {
        const merchant = await createMerchant(db(), { name: 'Plain http', wallets: { live: newAccount().address } });
        const key = await createApiKey(db(), merchant.id, 'live');
        // As if saved before https was required: an http URL on an endpoint of live mode.
        await setWebhook(db(), shop.service.config.secretKey, merchant.id, { url: 'https://shop.example/hook', events: ['session.expired'] }, 'live');
        await db().updateTable('webhook_endpoints').set({ url: plain.url }).where('merchant_id', '=', merchant.id).where('mode', '=', 'live').execute();
        const sessionId = await createSession(liveUrl, key.apiKey, { amount: 3, currency: 'USD' });
        const expired = await expireDueSessions(live.context, Date.now() + 2 * live.context.config.sessionTtlSeconds * 1000);
        assert.ok(expired.includes(sessionId));
        const event = await db().selectFrom('webhook_events').select(['id', 'mode']).where('session_id', '=', sessionId).executeTakeFirstOrThrow();
        assert.equal(event.mode, 'live');

        const worker = startWebhookWorker(live.context, {
          settings: { ...live.context.config.webhooks, allowLoopbackTargets: true, allowPrivateTargets: true },
        });
        try {
          const delivery = await waitFor(async () => {
            const row = await db().selectFrom('webhook_deliveries').selectAll().where('event_id', '=', event.id).executeTakeFirst();
            return row?.status !== 'PENDING' && row;
          }, 'the refused delivery');
          assert.equal(delivery.status, 'FAILED');
          assert.equal(delivery.attempts, 1);
          assert.match(delivery.last_error ?? '', /not sent: in live mode webhooks go to https URLs only/);
          const attempts = await db().selectFrom('webhook_attempts').selectAll().where('delivery_id', '=', delivery.id).execute();
          assert.deepEqual(
            attempts.map((attempt) => [attempt.status_code, attempt.error]),
            [[null, 'not sent: in live mode webhooks go to https URLs only, and this endpoint has an http URL']],
          );
        } finally {
          await worker.stop();
        }
        assert.equal(plain.received.length, 0, 'nothing reached the http URL');
      } finally {
        await plain.close();
      }
    });

    test('till live prepare archives the open sandbox sessions, removes the demo user, deletes the demo payout key and clears its wallet, in one go; a second run finds nothing', async () => {
      // The sandbox's demo merchant as `till serve` makes it (its payout key in the data folder), signed in, with a coding agent and client credentials.
      const made = await createDemoMerchant(db(), shop.service.config.dataDir);
      assert.ok(made);
      const demo = { id: made.merchantId };
      // The demo wallet is a test wallet; as if an operator had also made it the live one, which live money must never reach.
      await db().updateTable('merchants').set({ wallet_address: made.wallet }).where('id', '=', demo.id).execute();
      const demoKey = {
        apiKey: made.apiKey,
        keyId: (await db().selectFrom('api_keys').select('id').where('merchant_id', '=', demo.id).executeTakeFirstOrThrow()).id,
      };
      const user = (await findUserByEmail(db(), DEMO_USER_EMAIL))!;
      await startUserSession(db(), user.id, undefined, { idleSeconds: 3600, absoluteSeconds: 86_400 }, Date.now());
      await db()
        .transaction()
        .execute(async (trx) => {
          const grant = await addConsent(
            trx,
            {
              merchantId: demo.id,
              userId: user.id,
              clientId: 'https://agent.example/client.json',
              clientName: 'Agent',
              scopes: ['orders:read'],
              mode: 'sandbox',
            },
            Date.now(),
          );
          await issueGrantSecret(trx, 'refresh_token', { grantId: grant.id, clientId: grant.clientId }, Date.now());
        });
      await createClient(db(), demo.id, 'sandbox');
      const liveSession = await createSession(liveUrl, liveKey, { amount: 4, currency: 'USD' });

      const before = await liveReadiness(db(), shop.service.config.dataDir);
      assert.ok(before.payableSandboxSessions >= 2, `open sandbox sessions: ${before.payableSandboxSessions}`);
      assert.equal(before.demoUser, true);
      assert.equal(before.demoPayoutKey, made.payoutKeyFile);
      assert.equal(before.demoWallet, made.wallet);
      assert.deepEqual(before.demoWalletMerchants, [demo.id]);
      const events = async () =>
        Number(
          (
            await db()
              .selectFrom('webhook_events')
              .select((eb) => eb.fn.countAll().as('n'))
              .executeTakeFirstOrThrow()
          ).n,
        );
      const eventsBefore = await events();

      const { config } = shop.service;
      const run = await runNodeScript(CLI, ['live', 'prepare', '--json'], {
        env: {
          ...Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('TILL_') && name !== 'PORT')),
          TILL_DATABASE_URL: config.databaseUrl,
          TILL_DATA_DIR: config.dataDir,
          TILL_SECRET_KEY: config.secretKey.toString('hex'),
          TILL_LOG_LEVEL: 'silent',
        },
      });
      assert.equal(run.code, 0, run.stderr);
      assert.deepEqual(JSON.parse(run.stdout), {
        sessionsArchived: before.payableSandboxSessions,
        demoMerchantId: demo.id,
        demoUserRemoved: true,
        grantsRemoved: 1,
        keysRevoked: [demoKey.keyId],
        clientsRevoked: [(await db().selectFrom('oauth_clients').select('id').where('merchant_id', '=', demo.id).executeTakeFirstOrThrow()).id],
        demoPayoutKeyRemoved: made.payoutKeyFile,
        walletsCleared: [demo.id],
      });

      assert.deepEqual(await liveReadiness(db(), shop.service.config.dataDir), {
        payableSandboxSessions: 0,
        demoUser: false,
        demoPayoutKey: null,
        demoWallet: null,
        demoWalletMerchants: [],
      });
      assert.equal(existsSync(made.payoutKeyFile), false, 'the demo payout key is deleted');
      assert.equal((await findMerchant(db(), demo.id))?.wallets.live, null, 'the demo merchant is paid out nowhere in live');
      assert.equal(await countPayableSandboxSessions(db()), 0);
      assert.equal(await findUserByEmail(db(), DEMO_USER_EMAIL), undefined);
      assert.equal(await events(), eventsBefore, 'archiving sends no webhook');
      // Archived: not payable in the sandbox either; the live session is untouched.
      assert.equal((await fetch(`${shop.baseUrl}/x402/session/${sandboxOpen}`)).status, 404);
      assert.equal((await fetch(`${liveUrl}/x402/session/${liveSession}`)).status, 402);
      const demoKeyUse = await sessionRequest(shop.baseUrl, demoKey.apiKey, 'POST', { amount: 1, currency: 'USD' });
      assert.equal(demoKeyUse.status, 401);

      assert.deepEqual(await prepareForLive(db(), shop.service.config.dataDir), {
        sessionsArchived: 0,
        demoMerchantId: null,
        demoUserRemoved: false,
        grantsRemoved: 0,
        keysRevoked: [],
        clientsRevoked: [],
        demoPayoutKeyRemoved: null,
        walletsCleared: [],
      });
    });
  });
}
