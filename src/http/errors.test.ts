import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { test } from 'node:test';
import { ERROR_CODES } from './errors.ts';

const API_DOC = resolve(import.meta.dirname, '../../docs/api.md');
const START = '<!-- error-codes:start -->';
const END = '<!-- error-codes:end -->';

/** The table docs/api.md shows between its markers, one row per catalogue code. */
function errorCodesTable(): string {
  const cell = (text: string) => text.replaceAll('|', '\\|');
  return [
    '| Status | `code` | When |',
    '|---|---|---|',
    ...ERROR_CODES.map(({ code, status, meaning }) => `| ${status} | \`${code}\` | ${cell(meaning)} |`),
  ].join('\n');
}

test('docs/api.md lists every error code of the catalogue, with its status and meaning', () => {
  const text = readFileSync(API_DOC, 'utf8');
  const start = text.indexOf(START);
  const end = text.indexOf(END);
  assert.ok(start !== -1 && end > start, `docs/api.md has ${START} … ${END}`);
  const documented = text.slice(start + START.length, end).trim();
  assert.equal(
    documented,
    errorCodesTable(),
    'the table between the error-codes markers in docs/api.md differs from ERROR_CATALOGUE; put the expected table there',
  );
});
