// Runs the whole suite with Node's test runner: SQLite always, PostgreSQL when TILL_TEST_POSTGRES_URL is set.
import { spawnSync } from 'node:child_process';

if (!process.env.TILL_TEST_POSTGRES_URL) {
  process.stdout.write(
    '\nNOTICE: TILL_TEST_POSTGRES_URL is not set — the PostgreSQL tests are SKIPPED; only SQLite runs.\n       Set it (e.g. postgres://postgres@127.0.0.1:5432/test) to run both engines.\n\n',
  );
}
const patterns = process.argv.length > 2 ? process.argv.slice(2) : ['src/**/*.test.ts', 'test/**/*.test.ts'];
const result = spawnSync(process.execPath, ['--test', '--test-concurrency=3', '--test-timeout=600000', ...patterns], { stdio: 'inherit' });
process.exit(result.status ?? 1);
