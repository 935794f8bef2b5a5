import type { FastifyInstance } from 'fastify';

/** Till's mark: a white T on the buttons' blue, drawn as SVG so it is sharp at every size. */
const FAVICON_SVG =
  '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32" rx="7" fill="#1d4ed8"/><path d="M8 8h16v4h-6v13h-4V12H8z" fill="#fff"/></svg>';

/** What every page's <head> links; browsers that ask for /favicon.ico anyway are sent to it. */
export const FAVICON_HREF = '/favicon.svg';

export function registerFavicon(app: FastifyInstance): void {
  app.get(FAVICON_HREF, async (_request, reply) =>
    reply
      .header('content-type', 'image/svg+xml')
      .header('cache-control', 'public, max-age=86400')
      .header('x-content-type-options', 'nosniff')
      // Opened on its own, the image runs nothing.
      .header('content-security-policy', "default-src 'none'; style-src 'unsafe-inline'; sandbox")
      .send(FAVICON_SVG),
  );
  app.get('/favicon.ico', async (_request, reply) => reply.redirect(FAVICON_HREF, 301));
}
