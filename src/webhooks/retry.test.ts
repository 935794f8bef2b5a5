import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConfigError, DEFAULT_RETRY_SCHEDULE, loadWebhookSettings, parseRetrySchedule } from '../config.ts';
import { type AttemptOutcome, parseRetryAfter } from './deliver.ts';
import { decideAfterAttempt } from './retry.ts';

const outcome = (statusCode: number | null, retryAfterMs: number | null = null): AttemptOutcome => ({
  startedAt: 0,
  latencyMs: 1,
  statusCode,
  error: statusCode === 200 ? null : 'x',
  responseExcerpt: '',
  retryAfterMs,
  refused: false,
});
const schedule = [1000, 2000, 5000];

test('only 200 succeeds; 204, 3xx, 5xx and network errors are retried on the schedule', () => {
  assert.deepEqual(decideAfterAttempt(outcome(200), 1, schedule), { status: 'SUCCEEDED' });
  for (const status of [201, 204, 302, 400, 500, null]) {
    assert.deepEqual(
      decideAfterAttempt(outcome(status), 2, schedule, () => 0.5),
      { status: 'PENDING', retryInMs: 2000 },
      String(status),
    );
  }
});

test('jitter stays within ±10 % of the step', () => {
  assert.equal((decideAfterAttempt(outcome(500), 3, schedule, () => 0) as { retryInMs: number }).retryInMs, 4500);
  assert.equal((decideAfterAttempt(outcome(500), 3, schedule, () => 0.999999) as { retryInMs: number }).retryInMs, 5500);
});

test('the schedule running out fails the delivery; 410 fails it and disables the endpoint', () => {
  const exhausted = decideAfterAttempt(outcome(500), 4, schedule);
  assert.equal(exhausted.status, 'FAILED');
  assert.equal((exhausted as { disableEndpoint: boolean }).disableEndpoint, false);
  const gone = decideAfterAttempt(outcome(410), 1, schedule);
  assert.equal(gone.status, 'FAILED');
  assert.equal((gone as { disableEndpoint: boolean }).disableEndpoint, true);
});

test('Retry-After on 429/503 postpones the retry, capped at a day', () => {
  assert.deepEqual(
    decideAfterAttempt(outcome(429, 60_000), 1, schedule, () => 0.5),
    { status: 'PENDING', retryInMs: 60_000 },
  );
  assert.deepEqual(
    decideAfterAttempt(outcome(503, 10), 1, schedule, () => 0.5),
    { status: 'PENDING', retryInMs: 1000 },
  );
  assert.deepEqual(
    decideAfterAttempt(outcome(503, 10 * 86_400_000), 1, schedule, () => 0.5),
    { status: 'PENDING', retryInMs: 86_400_000 },
  );
  assert.equal(parseRetryAfter('120', 0), 120_000);
  assert.equal(parseRetryAfter(new Date(90_000).toUTCString(), 30_000), 60_000);
  assert.equal(parseRetryAfter('soon', 0), null);
});

test('settings: the default schedule spans about three days; bad values name the setting', () => {
  const total = parseRetrySchedule(DEFAULT_RETRY_SCHEDULE).reduce((a, b) => a + b, 0);
  assert.ok(total > 3 * 86_400_000 && total < 3.5 * 86_400_000);
  assert.deepEqual(loadWebhookSettings({ TILL_WEBHOOK_RETRY_SCHEDULE: '1s, 2s,500ms', TILL_WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' }, 'live'), {
    retrySchedule: [1000, 2000, 500],
    allowLoopbackTargets: false,
    allowPrivateTargets: true,
  });
  assert.equal(loadWebhookSettings({}, 'live').allowPrivateTargets, false);
  assert.throws(
    () => loadWebhookSettings({ TILL_WEBHOOK_RETRY_SCHEDULE: '1s,soon' }, 'live'),
    (e: unknown) => e instanceof ConfigError && e.setting === 'TILL_WEBHOOK_RETRY_SCHEDULE',
  );
  assert.throws(
    () => loadWebhookSettings({ TILL_WEBHOOK_ALLOW_PRIVATE_TARGETS: 'yes' }, 'live'),
    (e: unknown) => e instanceof ConfigError && e.setting === 'TILL_WEBHOOK_ALLOW_PRIVATE_TARGETS',
  );
});

test('settings: loopback receivers are reached in the sandbox by default, never in live mode unless allowed', () => {
  assert.equal(loadWebhookSettings({}, 'sandbox').allowLoopbackTargets, true);
  assert.equal(loadWebhookSettings({}, 'sandbox').allowPrivateTargets, false);
  assert.equal(loadWebhookSettings({}, 'live').allowLoopbackTargets, false);
  assert.equal(loadWebhookSettings({ TILL_WEBHOOK_ALLOW_LOOPBACK_TARGETS: 'false' }, 'sandbox').allowLoopbackTargets, false);
  assert.equal(loadWebhookSettings({ TILL_WEBHOOK_ALLOW_LOOPBACK_TARGETS: 'true' }, 'live').allowLoopbackTargets, true);
  assert.throws(
    () => loadWebhookSettings({ TILL_WEBHOOK_ALLOW_LOOPBACK_TARGETS: '1' }, 'live'),
    (e: unknown) => e instanceof ConfigError && e.setting === 'TILL_WEBHOOK_ALLOW_LOOPBACK_TARGETS',
  );
});
