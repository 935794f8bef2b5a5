// Runs the whole suite with Node's test runner: SQLite always, PostgreSQL when TILL_TEST_POSTGRES_URL is set.
// `--quick` (npm run test:quick): the unit and route tests on SQLite only, passwords hashed at Argon2's
// minimum cost — no browser, cluster, reliability or x402 chain tests (QUICK_EXCLUDED) — all in one process.
import { spawnSync } from 'node:child_process';
import { globSync } from 'node:fs';

const args = process.argv.slice(2);
const quick = args.includes('--quick');
const given = args.filter((arg) => arg !== '--quick');
const env = { ...process.env };

/** What the quick tier leaves to `npm test`: real browsers, N-process clusters, crashes, fuzzing, payments against a chain, child processes. */
const QUICK_EXCLUDED = [
  /\.browser\.test\.ts$/,
  /^src\/web\/checkout\/checkout\.test\.ts$/, // the hosted page in Chromium
  /^src\/webhooks\/crash\.test\.ts$/, // SIGKILLed worker processes
  /^src\/mcp\/(inspector|conformance)\.test\.ts$/, // the MCP Inspector CLI and the conformance suite, as child processes
  /^src\/sandbox\/persistence\.test\.ts$/, // a sandbox chain process stopped and started again
  /^test\/(cluster|reliability)\//,
  /^test\/x402-[^/]+\.test\.ts$/,
  /^test\/(walkthrough|live-rehearsal|going-live|browser-sign-in|mcp-login|query-plans|cli|cli-help|users-cli|session-pay-to|x402-clients|refunds|refunds-model|mcp-crash)\.test\.ts$/,
];

if (quick) {
  delete env.TILL_TEST_POSTGRES_URL;
  env.TILL_TEST_PASSWORD_HASH_COST = 'minimal';
} else if (!env.TILL_TEST_POSTGRES_URL) {
  process.stdout.write(
    '\nNOTICE: TILL_TEST_POSTGRES_URL is not set — the PostgreSQL tests are SKIPPED; only SQLite runs.\n       Set it (e.g. postgres://postgres@127.0.0.1:5432/test) to run both engines.\n\n',
  );
}
const patterns = given.length > 0 ? given : ['src/**/*.test.ts', 'test/**/*.test.ts', 'packages/*/test/**/*.test.ts'];
// Globbed here, so installed packages (test/tools/*/node_modules) are left out as the test runner's own glob does.
const files = quick
  ? patterns
      .flatMap((pattern) => globSync(pattern))
      .filter((file) => !file.split('/').includes('node_modules') && !QUICK_EXCLUDED.some((rule) => rule.test(file)))
  : patterns;
// The quick tier runs every file in this one process: the service's modules load once instead of once per
// file, which is most of its time on two cores. The whole suite keeps a process per file.
const isolation = quick ? ['--test-isolation=none'] : ['--test-concurrency=3'];
const result = spawnSync(process.execPath, ['--import', './src/testing/password-hash-cost.ts', '--test', ...isolation, '--test-timeout=600000', ...files], {
  stdio: 'inherit',
  env,
});
process.exit(result.status ?? 1);
