// Live mode against a facilitator that answers as Coinbase documents its hosted one
// (src/testing/cdp-facilitator.ts): its 500-character description limit, its error bodies with a
// correlation id, the settle 402 once the free settlements are used, 429s with Retry-After, and
// what a gateway in front of it sends on a bad day. What a buyer's x402 client gets, what the chain
// holds, and what the operator reads in the log and /metrics.
//
// Stand-ins (src/testing/live-rehearsal.ts says more): Coinbase's facilitator and a Base node cannot
// be reached from here; the sandbox chain runs as Base behind an https server that asks for the
// JWTs of an Ed25519 CDP API key, as the portal makes by default. Everything else is real: `till
// serve` in its own process, its database, the x402 client, signatures and transfers on the chain.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { ExactEvmScheme } from '@x402/evm/exact/client';
import { wrapFetchWithPaymentFromConfig } from '@x402/fetch';
import { getAddress } from 'viem';
import { BASE_USDC_ADDRESS } from '../src/common/network.ts';
import { CDP_PAYMENT_METHOD_REQUIRED, CDP_RATE_LIMITED, type CdpAnswer, cdpError } from '../src/testing/cdp-facilitator.ts';
import { runNodeScript, type ServingProcess, serveTill } from '../src/testing/child-process.ts';
import { createServiceStorage, temporaryDirectories } from '../src/testing/environment.ts';
import { describeOnEngine, engines } from '../src/testing/harness.ts';
import { type HttpsFront, type LiveRehearsal, liveServiceEnv, startLiveRehearsal } from '../src/testing/live-rehearsal.ts';
import { newAccount } from '../src/testing/payer.ts';
import { waitFor } from '../src/testing/wait.ts';

const CLI = fileURLToPath(new URL('../src/cli/main.ts', import.meta.url));
const freshDir = temporaryDirectories('till-hosted-facilitator-');
const METRICS_TOKEN = 'metrics-token-of-this-test-0123456789';

for (const { engine, skip } of engines) {
  describeOnEngine(`the hosted facilitator as it really answers, on ${engine}`, skip, () => {
    let rehearsal: LiveRehearsal;
    let front: HttpsFront;
    let till: ServingProcess;
    let drop: () => Promise<void>;
    let apiKey: string;
    const wallet = getAddress(newAccount().address);

    const api = (path: string, init: RequestInit = {}) =>
      rehearsal.fetch(`${front.url}${path}`, { ...init, headers: { 'X-SC-ApiKey': apiKey, 'content-type': 'application/json', ...init.headers } });
    const createSession = async (body: Record<string, unknown>) => {
      const response = await api('/api/checkout/v2/payment_session', { method: 'POST', body: JSON.stringify({ currency: 'USD', ...body }) });
      assert.equal(response.status, 201, await response.clone().text());
      return ((await response.json()) as { sessionId: string }).sessionId;
    };
    const payUrl = (sessionId: string) => `${front.url}/x402/session/${sessionId}`;
    /** A buyer with 1 USDC and an x402 v2 client paying from its wallet. */
    const buyer = async () => {
      const account = newAccount();
      await rehearsal.sandbox.fund(account.address, '1');
      const pay = wrapFetchWithPaymentFromConfig(rehearsal.fetch, {
        schemes: [{ network: 'eip155:8453', client: new ExactEvmScheme(account) }],
        spendControls: { allowedAssets: [{ network: 'eip155:8453', asset: BASE_USDC_ADDRESS }] },
      } as never);
      return { account, pay: (sessionId: string) => pay(payUrl(sessionId)) };
    };
    /** The answer the facilitator gives once, and the correlation id it carries. */
    const scripted = (endpoint: 'verify' | 'settle', answer: CdpAnswer) => {
      rehearsal.answerNext(endpoint, answer);
      return (JSON.parse(answer.body) as { correlationId: string }).correlationId;
    };
    const logLineWith = (correlationId: string) =>
      waitFor(
        () => till.logLines().find((line) => (line.facilitator as { correlationId?: string } | undefined)?.correlationId === correlationId),
        `the log line of correlation id ${correlationId}`,
      );
    const problemsCounted = async (labels: string) => {
      const response = await rehearsal.fetch(`${front.url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
      assert.equal(response.status, 200);
      const text = await response.text();
      const line = text.split('\n').find((l) => l.startsWith(`till_facilitator_problems_total{${labels}}`));
      return line ? Number(line.split(' ').at(-1)) : 0;
    };

    before(async () => {
      rehearsal = await startLiveRehearsal({ dir: freshDir(), faultControls: true, blockIntervalMs: 400 });
      const storage = await createServiceStorage(engine);
      drop = storage.drop;
      let env: NodeJS.ProcessEnv;
      ({ env, front } = await liveServiceEnv(rehearsal, storage.settings));
      env.TILL_METRICS_TOKEN = METRICS_TOKEN;
      assert.equal((await runNodeScript(CLI, ['migrate'], { env })).code, 0);
      const created = await runNodeScript(CLI, ['merchant', 'create', '--name', 'Hosted facilitator shop', '--wallet', wallet, '--json'], { env });
      assert.equal(created.code, 0, created.stderr);
      ({ apiKey } = JSON.parse(created.stdout));
      till = await serveTill(CLI, env);
    });
    after(async () => {
      await till?.stop();
      await rehearsal?.stop();
      await drop?.();
    });

    test('a session described in 500 characters is paid: the description sent fits the facilitator, signed with an Ed25519 key', async () => {
      assert.doesNotMatch(rehearsal.apiKeySecret, /BEGIN/, "the service signs with an Ed25519 key, the portal's default");
      const sessionId = await createSession({ amount: 0.2, concept: `${'A hand-bound notebook 📓, '.repeat(30)}`.slice(0, 500) });
      const { pay } = await buyer();
      const paid = await pay(sessionId);
      const body = await paid.json();
      assert.equal(paid.status, 200, JSON.stringify(body));
      assert.equal(body.status, 'SUCCESS');
      assert.equal(rehearsal.stats.refused, 0, 'every call carried a valid JWT');
    });

    test('a refused request (401 on verify) is a definite 502 for the buyer and an error an operator reads: status, errorType, message, correlationId, the session; never the key', async () => {
      const sessionId = await createSession({ amount: 0.1 });
      const before = await problemsCounted('operation="verify",kind="refused",error_type="unauthorized"');
      const correlationId = scripted('verify', cdpError(401, { errorType: 'unauthorized', errorMessage: 'Unauthorized.' }));
      const { account, pay } = await buyer();
      const answer = await pay(sessionId);
      const body = await answer.json();
      assert.equal(answer.status, 502, JSON.stringify(body));
      assert.equal(body.error.code, 'facilitator_refused');
      assert.equal(answer.headers.get('retry-after'), null, 'retrying will not help: no Retry-After');
      assert.equal(await rehearsal.sandbox.balanceOf(account.address), 1_000_000n, 'nothing charged');
      const line = await logLineWith(correlationId);
      assert.equal(line.level, 50, 'logged as an error');
      assert.equal(line.sessionId, sessionId);
      assert.deepEqual(
        { ...(line.facilitator as object), correlationId: undefined },
        { operation: 'verify', kind: 'refused', status: 401, errorType: 'unauthorized', errorMessage: 'Unauthorized.', correlationId: undefined },
      );
      assert.equal(await problemsCounted('operation="verify",kind="refused",error_type="unauthorized"'), before + 1);
      assert.ok(!till.stdout.includes(rehearsal.apiKeySecret) && !till.stderr.includes(rehearsal.apiKeySecret), 'the key is never logged');
      assert.doesNotMatch(till.stdout, /Bearer /);
    });

    test("a 429 on verify passes the facilitator's Retry-After on: 503, nothing charged", async () => {
      const sessionId = await createSession({ amount: 0.1 });
      const correlationId = scripted('verify', cdpError(429, CDP_RATE_LIMITED, { 'retry-after': '17' }));
      const { account, pay } = await buyer();
      const answer = await pay(sessionId);
      const body = await answer.json();
      assert.equal(answer.status, 503, JSON.stringify(body));
      assert.equal(body.error.code, 'facilitator_unavailable');
      assert.equal(answer.headers.get('retry-after'), '17');
      assert.equal(await rehearsal.sandbox.balanceOf(account.address), 1_000_000n);
      assert.equal(((await logLineWith(correlationId)).facilitator as { kind: string }).kind, 'rate_limited');
    });

    test('settle refused with 402 payment_method_required: the claim ends at once (nothing moved) and the session is payable again', async () => {
      const sessionId = await createSession({ amount: 0.3 });
      const correlationId = scripted('settle', cdpError(402, CDP_PAYMENT_METHOD_REQUIRED));
      const first = await buyer();
      const refused = await first.pay(sessionId);
      const body = await refused.json();
      assert.equal(refused.status, 502, JSON.stringify(body));
      assert.equal(body.error.code, 'facilitator_refused');
      const line = await logLineWith(correlationId);
      assert.equal(line.sessionId, sessionId);
      assert.match(String(line.paymentId), /\S/);
      assert.equal((line.facilitator as { errorType: string }).errorType, 'payment_method_required');
      // Not held as "in progress" until the authorization runs out: another buyer pays at once.
      const second = await buyer();
      const paid = await second.pay(sessionId);
      assert.equal(paid.status, 200, JSON.stringify(await paid.clone().json()));
      assert.equal(await rehearsal.sandbox.balanceOf(first.account.address), 1_000_000n, 'the first buyer was not charged');
      assert.equal(await rehearsal.sandbox.balanceOf(second.account.address), 700_000n);
    });

    // Last: it moves the chain's clock past the authorizations' validBefore.
    test('a settle answered with HTML, an empty body or nonsense leaves no payment stuck, and its words are logged', async () => {
      const answers: CdpAnswer[] = [
        { status: 200, body: '<html><body>Service temporarily unavailable</body></html>', headers: { 'content-type': 'text/html' } },
        { status: 200, body: '', headers: {} },
        { status: 200, body: '{"status":"ok"}', headers: { 'content-type': 'application/json' } },
      ];
      const sessions: string[] = [];
      for (const answer of answers) {
        const sessionId = await createSession({ amount: 0.05 });
        rehearsal.answerNext('settle', answer);
        const { pay } = await buyer();
        const waiting = await pay(sessionId);
        assert.equal(waiting.status, 402);
        assert.equal((await waiting.json()).error, 'payment_in_progress', 'the outcome cannot be known from that answer: the chain decides');
        sessions.push(sessionId);
      }
      for (const said of ['Service temporarily unavailable', '<empty body>', '{"status":"ok"}'])
        await waitFor(
          () => till.logLines().find((line) => (line.facilitator as { excerpt?: string } | undefined)?.excerpt?.includes(said)),
          `the log line quoting ${said}`,
        );
      // Nothing was submitted: once the chain passes validBefore, each payment is FAILED and its session payable again.
      await rehearsal.sandbox.chain.increaseTime(120);
      for (const sessionId of sessions)
        await waitFor(
          async () => ((await (await rehearsal.fetch(payUrl(sessionId))).json()) as { error: string }).error === 'payment_required',
          `session ${sessionId} payable again`,
          30_000,
        );
    });
  });
}
