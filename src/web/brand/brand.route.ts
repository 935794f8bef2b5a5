import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../../context.ts';
import { checkAccentColor, findLogo } from '../../merchants/brand.ts';
import { accentStylesheet, BRAND_PATH } from '../kit/brand.ts';

/** Both names change with their content: a year's caching, never revalidated. */
const IMMUTABLE = 'public, max-age=31536000, immutable';

/**
 * What an uploaded file may do when opened on its own: nothing. No script, no plugin, no request, in
 * a sandbox of its own origin; browsers still show the image.
 */
export const LOGO_CSP = "default-src 'none'; sandbox";

/**
 * `GET /brand/logo/{sha256}`: a merchant's logo, by the hash of its bytes, with the type read from
 * those bytes when it was uploaded (never the uploader's), `nosniff`, and a policy that makes it
 * inert. `GET /brand/accent/{rrggbb}.css`: the accent stylesheet of a colour that passes the
 * settings' contrast check. Anything else is 404.
 */
export function registerBrandAssets(app: FastifyInstance, context: AppContext): void {
  app.get<{ Params: { hash: string } }>(`${BRAND_PATH}/logo/:hash`, async (request, reply) => {
    const { hash } = request.params;
    const logo = /^[0-9a-f]{64}$/.test(hash) ? await findLogo(context.db, hash) : undefined;
    if (!logo) return reply.callNotFound();
    return reply
      .type(logo.type)
      .header('cache-control', IMMUTABLE)
      .header('content-security-policy', LOGO_CSP)
      .header('x-content-type-options', 'nosniff')
      .header('cross-origin-resource-policy', 'same-origin')
      .send(logo.bytes);
  });
  app.get<{ Params: { file: string } }>(`${BRAND_PATH}/accent/:file`, async (request, reply) => {
    const color = /^([0-9a-f]{6})\.css$/.exec(request.params.file)?.[1];
    if (!color || !passesContrast(`#${color}`)) return reply.callNotFound();
    return reply
      .type('text/css; charset=utf-8')
      .header('cache-control', IMMUTABLE)
      .send(accentStylesheet(`#${color}`));
  });
}

function passesContrast(color: string): boolean {
  try {
    return checkAccentColor(color) === color;
  } catch {
    return false;
  }
}
