import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo, LookupFunction } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { postWebhook, type WebhookMessage, webhookTargetAllowance } from '../webhooks/deliver.ts';
import { startReceiver } from '../webhooks/fixtures/receiver.ts';
import { createGuardedAgent, isForbiddenAddress, isRefusedAddress, refusalOf } from './ssrf.ts';

const message = (url: string): WebhookMessage => ({
  url,
  eventId: 'evt_ssrf',
  body: '{}',
  webhookKey: 'whk_x',
  signingSecret: `whsec_${Buffer.alloc(32, 1).toString('base64')}`,
});

describe('SSRF guard', () => {
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  let ipv6Loopback: { port: number; hits: number; close(): Promise<void> } | undefined;
  before(async () => {
    receiver = await startReceiver();
    const server = createServer((_request, response) => {
      ipv6Loopback!.hits++;
      response.end();
    });
    const listening = await new Promise<boolean>((resolve) => {
      server.once('error', () => resolve(false));
      server.listen(0, '::1', () => resolve(true));
    });
    if (listening)
      ipv6Loopback = { port: (server.address() as AddressInfo).port, hits: 0, close: () => new Promise((resolve) => server.close(() => resolve())) };
  });
  after(async () => {
    await receiver.close();
    await ipv6Loopback?.close();
  });

  test('classifies non-public addresses, including mapped and embedded forms', () => {
    for (const address of [
      '127.0.0.1',
      '10.0.0.1',
      '172.16.5.4',
      '192.168.1.1',
      '100.64.0.1',
      '169.254.169.254',
      '0.0.0.0',
      '224.0.0.1',
      '255.255.255.255',
      '::1',
      '::',
      'fd00::1',
      'fc00::1',
      'fe80::1',
      'ff02::1',
      '::ffff:127.0.0.1',
      '::ffff:7f00:1',
      '::ffff:10.0.0.1',
      '::ffff:169.254.169.254',
      '64:ff9b::a00:1',
      'not-an-ip',
    ]) {
      assert.equal(isForbiddenAddress(address), true, address);
    }
    for (const address of ['8.8.8.8', '1.1.1.1', '93.184.216.34', '2606:4700:4700::1111', '::ffff:8.8.8.8']) {
      assert.equal(isForbiddenAddress(address), false, address);
    }
  });

  test('refuses every forbidden target before a byte is sent', async () => {
    const internalLookup: LookupFunction = (_hostname, options, callback) => {
      if (options.all) (callback as unknown as (e: null, a: { address: string; family: number }[]) => void)(null, [{ address: '10.0.0.1', family: 4 }]);
      else callback(null, '10.0.0.1', 4);
    };
    const agent = createGuardedAgent({ allowLoopbackTargets: false, allowPrivateTargets: false, lookup: internalLookup });
    const port = receiver.port;
    const targets = [
      `http://127.0.0.1:${port}/`,
      `http://10.0.0.1:${port}/`,
      `http://100.64.0.1:${port}/`,
      `http://169.254.169.254/latest/meta-data/`,
      `http://[::1]:${ipv6Loopback?.port ?? port}/`,
      `http://[::ffff:127.0.0.1]:${port}/`,
      `http://[fd00::1]:${port}/`,
      `http://2130706433:${port}/`,
      `http://0177.0.0.1:${port}/`,
      `https://127.0.0.1:${port}/`,
      `http://internal.example:${port}/`,
    ];
    for (const url of targets) {
      const outcome = await postWebhook(agent, message(url), 2000);
      assert.equal(outcome.statusCode, null, url);
      assert.match(outcome.error ?? '', /refused by the SSRF guard/, url);
    }
    // A name that really resolves to loopback, through the system resolver.
    const systemAgent = createGuardedAgent({ allowLoopbackTargets: false, allowPrivateTargets: false });
    const outcome = await postWebhook(systemAgent, message(`http://localhost:${port}/`), 2000);
    assert.match(outcome.error ?? '', /refused by the SSRF guard/);
    assert.equal(receiver.received.length, 0);
    assert.equal(ipv6Loopback?.hits ?? 0, 0);
    await agent.close();
    await systemAgent.close();
  });

  test('the sandbox allowance reaches loopback receivers and still refuses every other private address', async () => {
    const agent = createGuardedAgent({ allowLoopbackTargets: true, allowPrivateTargets: false });
    for (const url of [receiver.url, receiver.url.replace('127.0.0.1', 'localhost'), `http://[::ffff:127.0.0.1]:${receiver.port}/hooks`]) {
      const outcome = await postWebhook(agent, message(url), 2000);
      assert.equal(outcome.statusCode, 200, url);
      assert.equal(outcome.refused, false);
    }
    for (const url of ['http://10.0.0.1/', 'http://169.254.169.254/latest/meta-data/', 'http://[fd00::1]/', 'http://192.168.1.1/']) {
      const outcome = await postWebhook(agent, message(url), 2000);
      assert.equal(outcome.refused, true, url);
      assert.match(outcome.error ?? '', /non-public address/, url);
    }
    await agent.close();
    assert.equal(isRefusedAddress('127.0.0.1', { allowLoopbackTargets: true, allowPrivateTargets: false }), false);
    assert.equal(isRefusedAddress('10.0.0.1', { allowLoopbackTargets: true, allowPrivateTargets: false }), true);
    assert.equal(isRefusedAddress('127.0.0.1', { allowLoopbackTargets: false, allowPrivateTargets: false }), true);
  });

  test('a URL whose deliveries would be refused is told apart before any delivery', async () => {
    const sandbox = webhookTargetAllowance({ allowLoopbackTargets: true, allowPrivateTargets: false });
    const live = webhookTargetAllowance({ allowLoopbackTargets: false, allowPrivateTargets: false });
    assert.equal(await refusalOf('http://localhost:3000/webhooks', sandbox), undefined);
    assert.match(
      (await refusalOf('http://localhost:3000/webhooks', live)) ?? '',
      /localhost is (127\.0\.0\.1|::1), a loopback address \(allowed by TILL_WEBHOOK_ALLOW_LOOPBACK_TARGETS/,
    );
    assert.match((await refusalOf('http://10.1.2.3/hook', sandbox)) ?? '', /10\.1\.2\.3 is 10\.1\.2\.3, a private.*TILL_WEBHOOK_ALLOW_PRIVATE_TARGETS/);
    // Without the words of a capability, the refusal names only the address.
    assert.equal(
      await refusalOf('http://127.0.0.1/hook', { allowLoopbackTargets: false, allowPrivateTargets: false }),
      'refused by the SSRF guard: 127.0.0.1 is 127.0.0.1, a loopback address',
    );
    const internal: LookupFunction = (_hostname, _options, callback) =>
      (callback as unknown as (e: null, a: { address: string; family: number }[]) => void)(null, [
        { address: '93.184.216.34', family: 4 },
        { address: '10.0.0.7', family: 4 },
      ]);
    assert.match((await refusalOf('https://shop.example/hook', live, internal)) ?? '', /shop\.example is 10\.0\.0\.7/);
    const publicOnly: LookupFunction = (_hostname, _options, callback) =>
      (callback as unknown as (e: null, a: { address: string; family: number }[]) => void)(null, [{ address: '93.184.216.34', family: 4 }]);
    assert.equal(await refusalOf('https://shop.example/hook', live, publicOnly), undefined);
    assert.match((await refusalOf('https://no-such-host.invalid/hook', live)) ?? '', /does not resolve/);
  });

  test('a redirect is not followed, so a 302 to loopback reaches nothing', async () => {
    const target = await startReceiver();
    const redirector = await startReceiver(() => ({ status: 302, headers: { location: target.url } }));
    const agent = createGuardedAgent({ allowLoopbackTargets: false, allowPrivateTargets: true });
    const outcome = await postWebhook(agent, message(redirector.url), 2000);
    assert.equal(outcome.statusCode, 302);
    assert.match(outcome.error ?? '', /redirects are not followed/);
    assert.equal(redirector.received.length, 1);
    assert.equal(target.received.length, 0);
    await agent.close();
    await target.close();
    await redirector.close();
  });

  test('TILL_WEBHOOK_ALLOW_PRIVATE_TARGETS lifts the guard', async () => {
    const agent = createGuardedAgent({ allowLoopbackTargets: false, allowPrivateTargets: true });
    const before = receiver.received.length;
    const outcome = await postWebhook(agent, message(receiver.url), 2000);
    assert.equal(outcome.statusCode, 200);
    assert.equal(receiver.received.length, before + 1);
    await agent.close();
  });
});
