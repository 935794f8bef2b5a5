import { createHash } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { invalidField } from '../common/errors.ts';
import { X402_VERSION } from '../common/network.ts';
import type { AppContext } from '../context.ts';
import type { Mode } from '../db/schema.ts';
import { ErrorResponse } from '../http/errors.ts';
import { addRoute } from '../http/routes.ts';
import { validate } from '../http/validation.ts';
import { formatMinor } from '../money/decimal.ts';
import { currencyExponent } from '../money/iso4217.ts';
import { type DiscoverableSession, listDiscoverableSessions } from '../sessions/sessions.ts';
import { sessionResourceUrl } from '../sessions/views.ts';
import { BAZAAR, bazaarDeclaration } from './extensions.ts';
import { offerDescription } from './pricing.ts';

/**
 * `GET /.well-known/x402` (and `/.well-known/x402.json`, the name x402's origin-manifest proposal
 * uses): the payment links merchants made discoverable, for agents to find without a facilitator
 * or a payment first. Each item is the `DiscoveryResource` of x402's discovery API (a facilitator's
 * `GET /discovery/resources`, `@x402/extensions/bazaar`'s type) with the link's bazaar description
 * in `extensions`; pages by cursor as the bazaar search does. See docs/x402.md.
 */
export const MANIFEST_PATHS = ['/.well-known/x402', '/.well-known/x402.json'];
const DEFAULT_LIMIT = 50;
const MAX_LIMIT = 100;
/** Agents and catalogues may keep a page this long; the ETag makes asking again cheap. */
const MAX_AGE_S = 60;

const Query = z.strictObject({
  limit: z.coerce
    .number()
    .int()
    .min(1)
    .max(MAX_LIMIT)
    .optional()
    .meta({ description: `Items per page, 1–${MAX_LIMIT} (default ${DEFAULT_LIMIT})` }),
  cursor: z
    .string()
    .regex(/^[A-Za-z0-9_-]{1,100}$/)
    .optional()
    .meta({ description: 'The `pagination.cursor` of the previous page' }),
});

const Item = z
  .object({
    resource: z.string(),
    type: z.literal('http'),
    x402Version: z.literal(2),
    accepts: z.array(z.record(z.string(), z.unknown())),
    lastUpdated: z.string(),
    description: z.string(),
    mimeType: z.string(),
    serviceName: z.string().optional(),
    extensions: z.record(z.string(), z.unknown()),
    metadata: z.object({
      name: z.string(),
      price: z.string(),
      currency: z.string(),
      buyerChoosesAmount: z.boolean(),
      minAmount: z.string().optional(),
      merchant: z.string(),
    }),
  })
  .meta({ id: 'X402DiscoveryResource' });
const Manifest = z
  .object({
    x402Version: z.literal(2),
    items: z.array(Item),
    pagination: z.object({ limit: z.number(), cursor: z.string().nullable() }),
  })
  .meta({ id: 'X402DiscoveryManifest' });

/** bazaar's `serviceName` rule: printable ASCII, 1–32 characters; a merchant name that breaks it is left out. */
const SERVICE_NAME = /^[\x20-\x7e]{1,32}$/;

const encodeCursor = (id: string) => Buffer.from(id, 'utf8').toString('base64url');
function decodeCursor(cursor: string): string {
  const id = Buffer.from(cursor, 'base64url').toString('utf8');
  if (!/^[A-Za-z0-9_-]{1,64}$/.test(id)) throw invalidField('cursor', 'is not a cursor this manifest gave');
  return id;
}

function item(baseUrl: string, session: DiscoverableSession) {
  const exponent = currencyExponent(session.currency) ?? 2;
  const editable = session.editable === 1;
  const price = formatMinor(session.amount_minor, exponent);
  const name = session.concept ?? session.order_id ?? 'Payment link';
  return {
    resource: sessionResourceUrl(baseUrl, session.id),
    type: 'http' as const,
    x402Version: X402_VERSION,
    // Advisory in the proposals and empty here: a link is priced in its currency, and the USDC it
    // asks is quoted by its live 402 (90 s quotes), which is authoritative anyway.
    accepts: [],
    lastUpdated: new Date(session.updated_at).toISOString(),
    description: offerDescription(`${session.merchant_name}: ${name}`),
    mimeType: 'application/json',
    ...(SERVICE_NAME.test(session.merchant_name) ? { serviceName: session.merchant_name } : {}),
    extensions: { [BAZAAR]: bazaarDeclaration({ editable, suggestedAmount: price }) },
    metadata: {
      name,
      price,
      currency: session.currency,
      buyerChoosesAmount: editable,
      ...(editable && session.min_amount_minor !== null ? { minAmount: formatMinor(session.min_amount_minor, exponent) } : {}),
      merchant: session.merchant_name,
    },
  };
}

/**
 * The mode whose links are listed: live on a deployment that serves live, so a test link is never
 * offered to an agent as a way to pay for real; test on a test-only (sandbox) deployment.
 */
export const listedMode = (modes: readonly Mode[]): Mode => (modes.includes('live') ? 'live' : 'sandbox');

export function registerDiscoveryManifest(app: FastifyInstance, context: AppContext): void {
  const mode = listedMode(context.config.modes);
  for (const url of MANIFEST_PATHS) {
    addRoute(
      app,
      {
        method: 'GET',
        url,
        // One manifest at two addresses: the second's name says which.
        operationId: url.endsWith('.json') ? 'getDiscoveryManifestJson' : 'getDiscoveryManifest',
        tag: 'x402',
        summary: 'The payment links merchants made discoverable, for agents (x402 origin manifest)',
        description:
          'Public and cacheable (Cache-Control, ETag; If-None-Match answers 304). Lists only links their merchant marked discoverable, payable now, of the mode the deployment serves live (test links only on a test-only deployment). Paged by `cursor`. See docs/x402.md.',
        security: 'none',
        query: Query,
        responses: {
          200: { description: 'One page of the manifest', schema: Manifest },
          304: { description: 'Unchanged since the ETag sent in If-None-Match' },
          400: { description: 'A malformed limit or cursor, or another query parameter', schema: ErrorResponse },
        },
      },
      {},
      async (request, reply) => {
        const query = validate(Query, request.query);
        const limit = query.limit ?? DEFAULT_LIMIT;
        const afterId = query.cursor === undefined ? undefined : decodeCursor(query.cursor);
        // One more than a page tells whether another page follows.
        const sessions = await listDiscoverableSessions(context.db, mode, { afterId, limit: limit + 1, now: context.now() });
        const page = sessions.slice(0, limit);
        const body = JSON.stringify({
          x402Version: X402_VERSION,
          items: page.map((session) => item(context.config.baseUrl, session)),
          pagination: { limit, cursor: sessions.length > limit ? encodeCursor(page.at(-1)!.id) : null },
        });
        const etag = `"${createHash('sha256').update(body).digest('base64url')}"`;
        reply.header('cache-control', `public, max-age=${MAX_AGE_S}`).header('etag', etag).header('access-control-allow-origin', '*');
        if (ifNoneMatch(request.headers['if-none-match'], etag)) return reply.code(304).send();
        return reply.type('application/json; charset=utf-8').send(body);
      },
    );
  }
}

/** RFC 9110 If-None-Match: `*`, or a list of tags one of which is ours (weak comparison). */
function ifNoneMatch(header: string | undefined, etag: string): boolean {
  if (!header) return false;
  return header
    .split(',')
    .map((tag) => tag.trim().replace(/^W\//, ''))
    .some((tag) => tag === '*' || tag === etag);
}
