import type { Brand } from '../../merchants/brand.ts';
import { type Html, html } from './html.ts';

/**
 * A merchant's brand on the pages buyers see (the hosted payment page, the receipt). Both parts are
 * served from Till's own origin, so the pages' Content-Security-Policy (`img-src 'self'`,
 * `style-src 'self'`) needs no exception: the logo at a URL named by the SHA-256 of its bytes, and
 * the accent colour as a one-rule stylesheet named by the colour. Both names change with the
 * content, so both are cached for a year. Without a brand, nothing is added to a page.
 */
export const BRAND_PATH = '/brand';

export const logoPath = (hash: string) => `${BRAND_PATH}/logo/${hash}`;

/** `#0f766e` → `/brand/accent/0f766e.css`. */
export const accentStylesheetPath = (color: string) => `${BRAND_PATH}/accent/${color.slice(1)}.css`;

/**
 * The accent stylesheet: custom properties the pages' own stylesheets read, each with Till's own
 * value as the fallback (`var(--accent, #1d4ed8)`): buttons and links in the colour, and a bar of
 * it along the top of the page's card.
 */
export const accentStylesheet = (color: string) => `:root{--accent:${color};--accent-bar:4px solid ${color}}\n`;

/** What a branded page adds to its <head>: the accent stylesheet, when there is an accent. */
export const brandHead = (brand: Brand | undefined): Html =>
  brand?.accentColor ? html`<link rel="stylesheet" href="${accentStylesheetPath(brand.accentColor)}">` : html``;

/** The merchant's logo, named by the business's name for those who cannot see it; nothing without one. */
export const brandLogo = (brand: Brand | undefined, businessName: string): Html =>
  brand?.logo
    ? html`<img class="brand-logo" src="${logoPath(brand.logo.hash)}" alt="${businessName}" width="${brand.logo.width}" height="${brand.logo.height}">`
    : html``;
