// The brand's checks, without a database: a logo is taken by its content only (PNG, JPEG or WebP,
// bounded in bytes and pixels), and an accent colour only when white text on it passes WCAG AA.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { TillError } from '../common/errors.ts';
import { checkAccentColor, checkLogo, contrastWithWhite } from './brand.ts';
import { noisePng, pngOf } from './fixtures/images.ts';

const fixture = (name: string) => new Uint8Array(readFileSync(join(import.meta.dirname, 'fixtures', name)));

/** The problem a refusal names (the message after the field's name), or fails when nothing is refused. */
function refusal(check: () => unknown, field: string): string {
  try {
    check();
  } catch (error) {
    assert.ok(error instanceof TillError && error.code === 'invalid_field' && error.field === field, String(error));
    return error.message.slice(field.length + 1);
  }
  assert.fail('not refused');
}

test('a PNG, a JPEG and each kind of WebP (lossy, lossless, extended) are taken, with their type and size read from their bytes', () => {
  assert.deepEqual(checkLogo(fixture('logo.png')), { type: 'image/png', width: 240, height: 80 });
  assert.deepEqual(checkLogo(fixture('logo.jpg')), { type: 'image/jpeg', width: 240, height: 80 });
  assert.deepEqual(checkLogo(fixture('logo.webp')), { type: 'image/webp', width: 240, height: 80 });
  assert.deepEqual(checkLogo(fixture('logo-vp8.webp')), { type: 'image/webp', width: 240, height: 80 });
  assert.deepEqual(checkLogo(fixture('logo-vp8l.webp')), { type: 'image/webp', width: 240, height: 80 });
  assert.deepEqual(checkLogo(pngOf(16, 1024)), { type: 'image/png', width: 16, height: 1024 });
});

test('anything else is refused by what its content is, whatever it is called', () => {
  const gif = Buffer.concat([Buffer.from('GIF89a'), Buffer.from([0x10, 0, 0x10, 0, 0, 0, 0]), Buffer.alloc(40)]);
  assert.match(
    refusal(() => checkLogo(gif), 'logo'),
    /^is a GIF image: only PNG, JPEG or WebP images are taken$/,
  );
  const svg = Buffer.from('\uFEFF  <?xml version="1.0"?>\n<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"><script>alert(2)</script></svg>');
  assert.match(
    refusal(() => checkLogo(svg), 'logo'),
    /^is an SVG image, which can carry scripts/,
  );
  assert.match(
    refusal(() => checkLogo(Buffer.from('<svg viewBox="0 0 1 1"/>')), 'logo'),
    /SVG/,
  );
  // Text saved as logo.png: its name says PNG, its bytes do not.
  assert.match(
    refusal(() => checkLogo(Buffer.from('just some text, renamed to logo.png\n')), 'logo'),
    /^is not a PNG, JPEG or WebP image: its content/,
  );
  assert.match(
    refusal(() => checkLogo(new Uint8Array(0)), 'logo'),
    /^must be chosen/,
  );
  // A real signature over a header that cannot be read.
  assert.match(
    refusal(() => checkLogo(fixture('logo.png').subarray(0, 20)), 'logo'),
    /^starts like a PNG image but its header cannot be read/,
  );
  assert.match(
    refusal(() => checkLogo(Buffer.from([0xff, 0xd8, 0xff, 0xda, 0, 2])), 'logo'),
    /^starts like a JPEG image/,
  );
  assert.match(
    refusal(() => checkLogo(Buffer.from('RIFF\0\0\0\0WEBPVP8 ')), 'logo'),
    /^starts like a WebP image/,
  );
});

test('a logo over 256 KB, over 1024×1024 or under 16×16 pixels is refused with its own size', () => {
  const big = noisePng(320, 320);
  assert.ok(big.length > 256 * 1024);
  assert.equal(
    refusal(() => checkLogo(big), 'logo'),
    `is ${Math.ceil(big.length / 1024)} KB: at most 256 KB are taken. Save it smaller (a logo needs no more than 512×512 pixels)`,
  );
  assert.equal(
    refusal(() => checkLogo(pngOf(2000, 500)), 'logo'),
    'is 2000×500 pixels: at most 1024×1024 are taken',
  );
  assert.equal(
    refusal(() => checkLogo(pngOf(1024, 1025)), 'logo'),
    'is 1024×1025 pixels: at most 1024×1024 are taken',
  );
  assert.equal(
    refusal(() => checkLogo(pngOf(8, 8)), 'logo'),
    'is 8×8 pixels: at least 16×16 are needed to be seen',
  );
  // The dimensions of a JPEG and a WebP are read too: their headers say 4096 pixels wide.
  const jpeg = fixture('logo.jpg');
  const sof = jpeg.findIndex((byte, i) => byte === 0xff && jpeg[i + 1] === 0xc0);
  jpeg.set([0x10, 0x00], sof + 7);
  assert.equal(
    refusal(() => checkLogo(jpeg), 'logo'),
    'is 4096×80 pixels: at most 1024×1024 are taken',
  );
  const webp = fixture('logo.webp');
  webp.set([0xff, 0x0f, 0x00], 24);
  assert.equal(
    refusal(() => checkLogo(webp), 'logo'),
    'is 4096×80 pixels: at most 1024×1024 are taken',
  );
});

test('the contrast of white text is computed as WCAG 2 says', () => {
  assert.equal(contrastWithWhite('#000000').toFixed(2), '21.00');
  assert.equal(contrastWithWhite('#ffffff').toFixed(2), '1.00');
  assert.equal(contrastWithWhite('#1d4ed8').toFixed(2), '6.70');
  assert.equal(contrastWithWhite('#767676').toFixed(2), '4.54');
  assert.equal(contrastWithWhite('#777777').toFixed(2), '4.48');
});

test('an accent colour is #rrggbb, lower-cased, and refused with its ratio when white text on it fails WCAG AA', () => {
  assert.equal(checkAccentColor('#0F766E'), '#0f766e');
  assert.equal(checkAccentColor(' 0f766e '), '#0f766e');
  assert.equal(checkAccentColor('#767676'), '#767676');
  assert.equal(checkAccentColor(''), null);
  assert.equal(checkAccentColor('   '), null);
  for (const typed of ['red', '#fff', '#12345', '#1234567', '#ggg000', 'rgb(0,0,0)'])
    assert.match(
      refusal(() => checkAccentColor(typed), 'accent_color'),
      /^is not a colour: # followed by 6 hexadecimal digits/,
      typed,
    );
  assert.equal(
    refusal(() => checkAccentColor('#ffff00'), 'accent_color'),
    '#ffff00 gives white text a contrast of only 1.07:1, and buttons need at least 4.5:1 (WCAG AA): pick a darker colour',
  );
  // Just under the line (4.4799…:1): refused, and the ratio is cut, never rounded up towards 4.5.
  assert.match(
    refusal(() => checkAccentColor('#777777'), 'accent_color'),
    /only 4\.47:1/,
  );
});
