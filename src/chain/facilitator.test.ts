// How every answer a facilitator can give is read: a real HTTP server answering each verify and
// settle as the hosted facilitator does on a good or a bad day (its documented bodies: a rejection
// as a 400 with isValid/success false, an error in its schema with errorType, errorMessage and
// correlationId, the settle 402 payment_method_required, a 429 with Retry-After) or as a gateway in
// front of it does (HTML, an empty body), and the verdict or outcome the service draws from it.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import type { PaymentPayload, PaymentRequirements } from '@x402/core/types';
import { CDP_PAYMENT_METHOD_REQUIRED, CDP_RATE_LIMITED, type CdpAnswer, cdpError, json } from '../testing/cdp-facilitator.ts';
import { createFacilitator, FacilitatorError } from './facilitator.ts';

const HASH = `0x${'ab'.repeat(32)}`;
const payload = { x402Version: 2, accepted: {}, payload: {} } as unknown as PaymentPayload;
const requirements = { scheme: 'exact', network: 'eip155:8453', amount: '10000' } as unknown as PaymentRequirements;
const html = (status: number): CdpAnswer => ({ status, body: '<html><body><h1>502 Bad Gateway</h1></body></html>', headers: { 'content-type': 'text/html' } });
const raw = (status: number, body: string): CdpAnswer => ({ status, body, headers: { 'content-type': 'application/json' } });

describe('the facilitator client reads every answer', () => {
  let server: Server;
  let url: string;
  let next: CdpAnswer | 'hang' = json(200, {});
  const bodies: unknown[] = [];

  before(async () => {
    server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        bodies.push(chunks.length ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : undefined);
        if (next === 'hang') return;
        res.writeHead(next.status, next.headers);
        res.end(next.body);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/platform/v2/x402`;
  });
  after(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  const facilitator = () => createFacilitator({ url, headers: {}, settleTimeoutMs: 300 });
  const verifyWith = async (answer: CdpAnswer) => {
    next = answer;
    return facilitator().verify(payload, requirements);
  };
  const verifyProblem = async (answer: CdpAnswer) => {
    const error = await verifyWith(answer).then(
      () => assert.fail('a verdict was drawn from a non-verdict'),
      (e: unknown) => e,
    );
    assert.ok(error instanceof FacilitatorError, String(error));
    return error.problem;
  };
  const settleWith = async (answer: CdpAnswer | 'hang') => {
    next = answer;
    return facilitator().settle(payload, requirements);
  };

  test('the request is the documented body: x402Version, paymentPayload, paymentRequirements', async () => {
    await verifyWith(json(200, { isValid: true, payer: '0x1' }));
    assert.deepEqual(bodies.at(-1), { x402Version: 2, paymentPayload: payload, paymentRequirements: requirements });
  });

  test('verify: a 200 verdict and the documented 400 rejection are verdicts; the reason is kept', async () => {
    assert.deepEqual(await verifyWith(json(200, { isValid: true, payer: '0x1' })), { isValid: true, payer: '0x1' });
    assert.deepEqual(await verifyWith(json(400, { isValid: false, invalidReason: 'insufficient_funds', payer: '0x1' })), {
      isValid: false,
      invalidReason: 'insufficient_funds',
    });
  });

  test('verify: an error in the hosted schema is a problem carrying its status, errorType, message and correlationId', async () => {
    const problem = await verifyProblem(cdpError(401, { errorType: 'unauthorized', errorMessage: 'Unauthorized.' }));
    assert.equal(problem.kind, 'refused');
    assert.equal(problem.status, 401);
    assert.equal(problem.errorType, 'unauthorized');
    assert.equal(problem.errorMessage, 'Unauthorized.');
    assert.match(problem.correlationId ?? '', /\S/);
    const invalid = await verifyProblem(cdpError(400, { errorType: 'invalid_request', errorMessage: "'paymentPayload' is invalid" }));
    assert.equal(invalid.kind, 'refused', 'a 400 that is not a rejection is a configuration problem, the same on every retry');
  });

  test("verify: a 429 passes the facilitator's Retry-After on; 5xx, HTML, empty and nonsense bodies are problems with what they said", async () => {
    const limited = await verifyProblem(cdpError(429, CDP_RATE_LIMITED, { 'retry-after': '17' }));
    assert.deepEqual([limited.kind, limited.retryAfterSeconds, limited.errorType], ['rate_limited', 17, 'rate_limit_exceeded']);
    const gateway = await verifyProblem(html(502));
    assert.deepEqual([gateway.kind, gateway.status], ['server_error', 502]);
    assert.match(gateway.excerpt ?? '', /502 Bad Gateway/);
    assert.deepEqual((await verifyProblem(raw(200, ''))).excerpt, '<empty body>');
    assert.equal((await verifyProblem(raw(200, ''))).kind, 'unreadable');
    assert.equal((await verifyProblem(raw(200, '{"hello":"world"}'))).kind, 'unreadable');
    assert.equal((await verifyProblem(html(200))).kind, 'unreadable');
  });

  test('settle: success with a transaction is settled; a rejection without one (200 or 400) is refused with its reason', async () => {
    const settled = await settleWith(json(200, { success: true, transaction: HASH, network: 'eip155:8453', payer: '0x1' }));
    assert.deepEqual([settled.kind, settled.kind === 'settled' && settled.transaction], ['settled', HASH]);
    for (const status of [200, 400]) {
      const refused = await settleWith(json(status, { success: false, errorReason: 'insufficient_funds', transaction: '', network: 'eip155:8453' }));
      assert.equal(refused.kind, 'refused', `status ${status}`);
      assert.equal(refused.kind === 'refused' && refused.reason, 'insufficient_funds');
      assert.equal(refused.kind === 'refused' && refused.problem, undefined, "the payment's own refusal, not the service's problem");
    }
  });

  test('settle: 402 payment_method_required and 401 are refused with a configuration problem; a 429 with its Retry-After', async () => {
    const unpaid = await settleWith(cdpError(402, CDP_PAYMENT_METHOD_REQUIRED));
    assert.equal(unpaid.kind, 'refused');
    assert.deepEqual(unpaid.kind === 'refused' && [unpaid.reason, unpaid.problem?.kind, unpaid.problem?.status], ['payment_method_required', 'refused', 402]);
    const limited = await settleWith(cdpError(429, CDP_RATE_LIMITED, { 'retry-after': '3' }));
    assert.deepEqual(limited.kind === 'refused' && [limited.problem?.kind, limited.problem?.retryAfterSeconds], ['rate_limited', 3]);
  });

  test('settle: whatever may hide a transfer is unsure — pending with its hash, a 5xx, HTML, an empty body, nonsense, success without a hash, no answer in time', async () => {
    const pending = await settleWith(json(200, { success: false, errorReason: 'settlement_pending', transaction: HASH, network: 'eip155:8453' }));
    assert.deepEqual(pending.kind === 'unsure' && [pending.reason, pending.transaction], ['settlement_pending', HASH]);
    const failedAfter = await settleWith(json(500, { success: false, errorReason: 'unexpected_settle_error', transaction: HASH }));
    assert.deepEqual(failedAfter.kind === 'unsure' && failedAfter.transaction, HASH);
    for (const answer of [html(502), raw(503, ''), raw(200, ''), raw(200, '{"ok":1}'), json(200, { success: true, transaction: '' }), html(200)]) {
      const outcome = await settleWith(answer);
      assert.equal(outcome.kind, 'unsure', `${answer.status} ${answer.body}`);
      assert.ok(outcome.kind === 'unsure' && outcome.problem, 'with what it said');
    }
    const late = await settleWith('hang');
    assert.deepEqual(late.kind === 'unsure' && [late.reason, late.problem?.kind], ['settle_timeout', 'timeout']);
  });

  test('a CDP key that cannot sign (a well-formed secret of no key pair): nothing is sent, a refused request naming the key', async () => {
    const sent = bodies.length;
    const unsigned = createFacilitator({
      url,
      auth: { kind: 'coinbase', apiKeyId: 'key-id', apiKeySecret: Buffer.alloc(64, 7).toString('base64') },
      headers: {},
      settleTimeoutMs: 1000,
    });
    await assert.rejects(unsigned.verify(payload, requirements), (e: unknown) => {
      assert.ok(e instanceof FacilitatorError);
      assert.equal(e.problem.kind, 'refused');
      assert.match(e.problem.errorMessage ?? '', /the API key cannot sign the request/);
      return true;
    });
    const outcome = await unsigned.settle(payload, requirements);
    assert.deepEqual([outcome.kind, outcome.kind === 'refused' && outcome.reason], ['refused', 'request_not_signed']);
    assert.equal(bodies.length, sent, 'nothing reached the facilitator');
  });

  test('an answer carrying extension responses prints nothing outside the logger', async (t) => {
    const printed = t.mock.method(console, 'log', () => {});
    const extensions = Buffer.from(JSON.stringify({ bazaar: { status: 'rejected', reason: 'x' } })).toString('base64');
    next = { ...json(200, { isValid: true, payer: '0x1' }), headers: { 'content-type': 'application/json', 'extension-responses': extensions } };
    assert.equal((await facilitator().verify(payload, requirements)).isValid, true);
    next = {
      ...json(200, { success: true, transaction: HASH, network: 'eip155:8453' }),
      headers: { 'content-type': 'application/json', 'extension-responses': extensions },
    };
    assert.equal((await facilitator().settle(payload, requirements)).kind, 'settled');
    assert.equal(printed.mock.callCount(), 0);
  });

  test('nothing listening: no verdict (unreachable), and a settle is unsure', async () => {
    const closed = createFacilitator({ url: 'http://127.0.0.1:9/x402', headers: {}, settleTimeoutMs: 1000 });
    await assert.rejects(closed.verify(payload, requirements), (e: unknown) => e instanceof FacilitatorError && e.problem.kind === 'unreachable');
    const outcome = await closed.settle(payload, requirements);
    assert.deepEqual([outcome.kind, outcome.kind === 'unsure' && outcome.reason], ['unsure', 'settle_unanswered']);
  });
});
