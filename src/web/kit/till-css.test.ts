// The shared stylesheet: every block it opens it closes, so no rule ends up inside a media query
// by accident (a phone-only rule set would leave the desktop pages unstyled).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';

const STYLESHEET = readFileSync(join(import.meta.dirname, 'till.css'), 'utf8');

test('the stylesheet’s braces balance, and never close more than they opened', () => {
  let depth = 0;
  STYLESHEET.split('').forEach((char, index) => {
    if (char === '{') depth++;
    if (char === '}') depth--;
    assert.ok(depth >= 0, `a } without its { at ${index}`);
  });
  assert.equal(depth, 0, 'a block is left open');
});

test('outside media queries, blocks do not nest: the page rules apply at every width', () => {
  const topLevel = STYLESHEET.replace(/@media[^{]*\{(?:[^{}]*\{[^{}]*\})*[^{}]*\}/g, '');
  assert.doesNotMatch(topLevel, /\{[^}]*\{/);
});
