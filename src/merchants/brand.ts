import { createHash } from 'node:crypto';
import { invalidField } from '../common/errors.ts';
import type { Db } from '../db/index.ts';
import type { LogoType } from '../db/schema.ts';

/**
 * A merchant's brand on its hosted payment pages and receipts: a logo and an accent colour. Both are
 * the merchant's in both modes. The logo is taken only when its bytes are a PNG, JPEG or WebP image
 * of bounded size and dimensions, whatever the file's name or declared type; the accent colour only
 * when white text on it is readable (WCAG AA).
 */
export type Brand = {
  /** `#rrggbb`, lower-case, or null: Till's own blue. */
  accentColor: string | null;
  logo: LogoInfo | null;
};

export type LogoInfo = { type: LogoType; width: number; height: number; hash: string };

export const LOGO_MAX_BYTES = 256 * 1024;
export const LOGO_MAX_SIDE = 1024;
export const LOGO_MIN_SIDE = 16;
/** WCAG 2 AA for normal text. */
export const MIN_CONTRAST_WITH_WHITE = 4.5;

const NO_BRAND: Brand = { accentColor: null, logo: null };

const startsWith = (bytes: Uint8Array, signature: readonly number[], at = 0) => signature.every((byte, i) => bytes[at + i] === byte);
const ascii = (bytes: Uint8Array, from: number, to: number) => String.fromCharCode(...bytes.subarray(from, to));

const PNG_SIGNATURE = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];

/** Width and height of a PNG: its first chunk must be IHDR. */
function pngSize(bytes: Uint8Array): [number, number] | undefined {
  if (bytes.length < 24 || ascii(bytes, 12, 16) !== 'IHDR') return undefined;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  return [view.getUint32(16), view.getUint32(20)];
}

/** Width and height of a JPEG: from its first start-of-frame segment, walking the segments before it. */
function jpegSize(bytes: Uint8Array): [number, number] | undefined {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let at = 2;
  while (at + 4 <= bytes.length) {
    if (bytes[at] !== 0xff) return undefined;
    const marker = bytes[at + 1]!;
    if (marker === 0xff) {
      at += 1; // fill byte
      continue;
    }
    if (marker === 0xd8 || marker === 0x01 || (marker >= 0xd0 && marker <= 0xd7)) {
      at += 2; // markers without a length
      continue;
    }
    if (marker === 0xd9 || marker === 0xda) return undefined; // the image ends or starts before any frame
    const length = view.getUint16(at + 2);
    // SOF0…SOF15, but DHT (C4), JPG (C8) and DAC (CC), which share the range.
    if (marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc) {
      if (at + 9 > bytes.length) return undefined;
      return [view.getUint16(at + 7), view.getUint16(at + 5)];
    }
    at += 2 + length;
  }
  return undefined;
}

/** Width and height of a WebP: lossy (VP8), lossless (VP8L) or extended (VP8X, its canvas). */
function webpSize(bytes: Uint8Array): [number, number] | undefined {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const chunk = ascii(bytes, 12, 16);
  if (chunk === 'VP8 ' && bytes.length >= 30 && startsWith(bytes, [0x9d, 0x01, 0x2a], 23))
    return [view.getUint16(26, true) & 0x3fff, view.getUint16(28, true) & 0x3fff];
  if (chunk === 'VP8L' && bytes.length >= 25 && bytes[20] === 0x2f) {
    const bits = view.getUint32(21, true);
    return [(bits & 0x3fff) + 1, ((bits >>> 14) & 0x3fff) + 1];
  }
  if (chunk === 'VP8X' && bytes.length >= 30) {
    const uint24 = (at: number) => bytes[at]! | (bytes[at + 1]! << 8) | (bytes[at + 2]! << 16);
    return [uint24(24) + 1, uint24(27) + 1];
  }
  return undefined;
}

/** Each type taken, as people name it. */
export const LOGO_TYPE_NAMES: Record<LogoType, string> = { 'image/png': 'PNG', 'image/jpeg': 'JPEG', 'image/webp': 'WebP' };

/** What a file's first bytes say it is, among the types taken and those refused by name. */
function sniff(bytes: Uint8Array): LogoType | 'gif' | 'svg' | 'other' {
  if (startsWith(bytes, PNG_SIGNATURE)) return 'image/png';
  if (startsWith(bytes, [0xff, 0xd8, 0xff])) return 'image/jpeg';
  if (bytes.length >= 12 && ascii(bytes, 0, 4) === 'RIFF' && ascii(bytes, 8, 12) === 'WEBP') return 'image/webp';
  if (bytes.length >= 6 && /^GIF8[79]a$/.test(ascii(bytes, 0, 6))) return 'gif';
  // SVG is text: markup (after a byte order mark and blanks) with an <svg element near its start.
  const head = new TextDecoder('utf-8', { fatal: false }).decode(bytes.subarray(0, 4096)).replace(/^\uFEFF?\s*/, '');
  if (head.startsWith('<') && /<svg[\s>]/i.test(head)) return 'svg';
  return 'other';
}

const kilobytes = (bytes: number) => `${Math.ceil(bytes / 1024)} KB`;

/**
 * The logo's type, read from its bytes, and its size in pixels, read from its header; refused
 * (`invalid_field` on `logo`, the problem said for people) when it is not a PNG, JPEG or WebP image
 * within the bounds.
 */
export function checkLogo(bytes: Uint8Array): Omit<LogoInfo, 'hash'> {
  if (bytes.length === 0) throw invalidField('logo', 'must be chosen: pick a PNG, JPEG or WebP file');
  if (bytes.length > LOGO_MAX_BYTES)
    throw invalidField(
      'logo',
      `is ${kilobytes(bytes.length)}: at most ${kilobytes(LOGO_MAX_BYTES)} are taken. Save it smaller (a logo needs no more than 512×512 pixels)`,
    );
  const kind = sniff(bytes);
  if (kind === 'gif') throw invalidField('logo', 'is a GIF image: only PNG, JPEG or WebP images are taken');
  if (kind === 'svg') throw invalidField('logo', 'is an SVG image, which can carry scripts: only PNG, JPEG or WebP images are taken');
  if (kind === 'other') throw invalidField('logo', 'is not a PNG, JPEG or WebP image: its content is none of these, whatever its name says');
  const size = kind === 'image/png' ? pngSize(bytes) : kind === 'image/jpeg' ? jpegSize(bytes) : webpSize(bytes);
  if (!size) throw invalidField('logo', `starts like a ${LOGO_TYPE_NAMES[kind]} image but its header cannot be read: the file looks damaged`);
  const [width, height] = size;
  if (width > LOGO_MAX_SIDE || height > LOGO_MAX_SIDE)
    throw invalidField('logo', `is ${width}×${height} pixels: at most ${LOGO_MAX_SIDE}×${LOGO_MAX_SIDE} are taken`);
  if (width < LOGO_MIN_SIDE || height < LOGO_MIN_SIDE)
    throw invalidField('logo', `is ${width}×${height} pixels: at least ${LOGO_MIN_SIDE}×${LOGO_MIN_SIDE} are needed to be seen`);
  return { type: kind, width, height };
}

/** WCAG 2 contrast ratio of white text on an `#rrggbb` colour (1 to 21). */
export function contrastWithWhite(color: string): number {
  const channel = (at: number) => {
    const c = Number.parseInt(color.slice(at, at + 2), 16) / 255;
    return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
  };
  const luminance = 0.2126 * channel(1) + 0.7152 * channel(3) + 0.0722 * channel(5);
  return 1.05 / (luminance + 0.05);
}

/**
 * A typed accent colour as `#rrggbb` (lower-case; the `#` may be left out), null when empty (Till's
 * own blue), refused (`invalid_field` on `accent_color`) when malformed or when white text on it
 * fails WCAG AA, with the ratio it has.
 */
export function checkAccentColor(typed: string): string | null {
  const trimmed = typed.trim();
  if (trimmed === '') return null;
  const match = /^#?([0-9a-fA-F]{6})$/.exec(trimmed);
  if (!match) throw invalidField('accent_color', 'is not a colour: # followed by 6 hexadecimal digits, like #0f766e');
  const color = `#${match[1]!.toLowerCase()}`;
  const ratio = contrastWithWhite(color);
  if (ratio < MIN_CONTRAST_WITH_WHITE)
    throw invalidField(
      'accent_color',
      `${color} gives white text a contrast of only ${(Math.floor(ratio * 100) / 100).toFixed(2)}:1, and buttons need at least ${MIN_CONTRAST_WITH_WHITE}:1 (WCAG AA): pick a darker colour`,
    );
  return color;
}

type BrandRow = { accent_color: string | null; logo_type: LogoType | null; logo_hash: string | null; logo_width: number | null; logo_height: number | null };

function brandOf(row: BrandRow | undefined): Brand {
  if (!row) return NO_BRAND;
  const logo =
    row.logo_type && row.logo_hash && row.logo_width !== null && row.logo_height !== null
      ? { type: row.logo_type, hash: row.logo_hash, width: Number(row.logo_width), height: Number(row.logo_height) }
      : null;
  return { accentColor: row.accent_color, logo };
}

/** The merchant's brand (without the logo's bytes); no brand when it never set one. */
export async function findBrand(db: Db, merchantId: string): Promise<Brand> {
  const row = await db
    .selectFrom('merchant_brands')
    .select(['accent_color', 'logo_type', 'logo_hash', 'logo_width', 'logo_height'])
    .where('merchant_id', '=', merchantId)
    .executeTakeFirst();
  return brandOf(row);
}

/** A logo's bytes and type by the SHA-256 its URL names, whichever merchant has it. */
export async function findLogo(db: Db, hash: string): Promise<{ bytes: Buffer; type: LogoType } | undefined> {
  const row = await db
    .selectFrom('merchant_brands')
    .select(['logo_base64', 'logo_type'])
    .where('logo_hash', '=', hash)
    .where('logo_base64', 'is not', null)
    .executeTakeFirst();
  if (!row?.logo_base64 || !row.logo_type) return undefined;
  return { bytes: Buffer.from(row.logo_base64, 'base64'), type: row.logo_type };
}

type BrandChange = Partial<BrandRow & { logo_base64: string | null }>;

async function saveBrand(db: Db, merchantId: string, change: BrandChange, now: number): Promise<void> {
  await db
    .insertInto('merchant_brands')
    .values({ merchant_id: merchantId, updated_at: now, ...change })
    .onConflict((conflict) => conflict.column('merchant_id').doUpdateSet({ ...change, updated_at: now }))
    .execute();
}

/** Checks a logo's bytes (checkLogo) and makes it the merchant's; answers what is stored. */
export async function setLogo(db: Db, merchantId: string, bytes: Uint8Array, now = Date.now()): Promise<LogoInfo> {
  const checked = checkLogo(bytes);
  const hash = createHash('sha256').update(bytes).digest('hex');
  await saveBrand(
    db,
    merchantId,
    {
      logo_base64: Buffer.from(bytes).toString('base64'),
      logo_type: checked.type,
      logo_hash: hash,
      logo_width: checked.width,
      logo_height: checked.height,
    },
    now,
  );
  return { ...checked, hash };
}

export async function removeLogo(db: Db, merchantId: string, now = Date.now()): Promise<void> {
  await saveBrand(db, merchantId, { logo_base64: null, logo_type: null, logo_hash: null, logo_width: null, logo_height: null }, now);
}

/** Checks a typed accent colour (checkAccentColor) and saves it; empty clears it. Answers what is stored. */
export async function setAccentColor(db: Db, merchantId: string, typed: string, now = Date.now()): Promise<string | null> {
  const color = checkAccentColor(typed);
  await saveBrand(db, merchantId, { accent_color: color }, now);
  return color;
}
