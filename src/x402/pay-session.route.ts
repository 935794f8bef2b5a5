import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { AppContext } from '../context.ts';
import type { FastLane } from '../http/app.ts';
import { ErrorResponse } from '../http/errors.ts';
import { addRoute, type RouteDoc } from '../http/routes.ts';
import { validate } from '../http/validation.ts';
import type { Answer } from './answers.ts';
import type { ChallengeCache, EncodedChallenge } from './challenge-cache.ts';
import { CORS_HEADERS } from './cors.ts';
import { answerPayRequest } from './pay.ts';
import type { PayerFlow, X402Services } from './services.ts';

const SESSION_ID_MAX = 64;
export const X402_PATHS = ['/x402/session/{sessionId}', '/checkout/v2/x402/session/{sessionId}'];
/** One operation per path, for clients generated from the OpenAPI document. */
const OPERATION_IDS: Record<string, string> = { [X402_PATHS[0]!]: 'payX402Session', [X402_PATHS[1]!]: 'payX402SessionUnderCheckout' };
const Params = z.strictObject({ sessionId: z.string().min(1).max(SESSION_ID_MAX) });
const Query = z.strictObject({
  amount: z.string().optional().meta({ description: 'Buyer-chosen amount in the session currency; editable sessions only, on both requests' }),
});

const PaidBody = z
  .object({ status: z.literal('SUCCESS'), paymentSessionId: z.string(), payTo: z.string(), receipt: z.string(), paymentId: z.string() })
  .meta({ id: 'X402Paid' });
const ChallengeBody = z
  .object({
    x402Version: z.literal(2),
    error: z.string(),
    message: z.string(),
    accepts: z.array(z.record(z.string(), z.unknown())),
    extensions: z
      .record(z.string(), z.unknown())
      .optional()
      .meta({ description: 'With an offer: `payment-identifier` (always) and `bazaar` (a discoverable link), as in PAYMENT-REQUIRED' }),
    amount: z.number().optional().meta({ description: 'With an offer: the amount in the session currency that maxAmountRequired is the price of' }),
    currency: z.string().optional().meta({ description: 'The session currency (ISO 4217)' }),
  })
  .meta({ id: 'X402Challenge' });

function docFor(url: string): RouteDoc {
  return {
    method: 'GET',
    url,
    operationId: OPERATION_IDS[url]!,
    tag: 'x402',
    summary: 'Pay a session over x402 (E3)',
    description:
      'Public. Without a proof: 402 with the challenge (body and PAYMENT-REQUIRED header). With X-PAYMENT or PAYMENT-SIGNATURE: verified, settled once, 200. A v2 payload may name its payment with the `payment-identifier` extension: a retry carrying the same identifier gets the first outcome and is never charged again. See docs/x402.md for every `error` code.',
    security: 'none',
    params: Params,
    query: Query,
    responses: {
      200: { description: 'Paid, or already settled (idempotent); X-PAYMENT-RESPONSE and PAYMENT-RESPONSE headers', schema: PaidBody },
      400: {
        description: '?amount= malformed, or sent for a fixed-amount session; or a malformed payment-identifier id (invalid_payment_identifier)',
        schema: ErrorResponse,
      },
      402: { description: 'Challenge: no payment yet, or the proof was refused (`error` says why)', schema: ChallengeBody },
      404: { description: 'Unknown or expired session', schema: ErrorResponse },
      409: {
        description: 'The payment-identifier names a payment of another session, payer or amount (payment_identifier_reused); nothing was charged',
        schema: ErrorResponse,
      },
      422: { description: 'No payout wallet configured, so no payTo can be quoted', schema: ErrorResponse },
      429: {
        description:
          'Too many payment proofs from this client, from this payer for this session or for this session, or too many new quotes (distinct ?amount= values) for this session from this client or from all',
        schema: ErrorResponse,
      },
      503: {
        description:
          'No fresh exchange rate for the session currency (rate_unavailable), or the facilitator does not answer (facilitator_unavailable); nothing was charged',
        schema: ErrorResponse,
      },
    },
  };
}

export function registerPaySession(app: FastifyInstance, context: AppContext, services: X402Services, challenges: ChallengeCache): void {
  const payer: PayerFlow = { context, services };
  const handler = async (request: FastifyRequest, reply: FastifyReply) => {
    const { sessionId, query } = readInput(request);
    const xPayment = header(request, 'x-payment');
    const paymentSignature = header(request, 'payment-signature');
    // Only a request without a proof may be answered from the cache; a proof always goes to the database.
    const cacheable = xPayment === undefined && paymentSignature === undefined;
    const amountKey = query.amount ?? '';
    if (cacheable) {
      const cached = challenges.get(sessionId, amountKey, context.now());
      if (cached) {
        context.metrics.x402ChallengesCached.inc();
        return sendEncoded(reply, cached);
      }
    }
    const ticket = challenges.ticket();
    const answer = await answerPayRequest(payer, { sessionId, amount: query.amount, xPayment, paymentSignature, ip: request.ip, log: request.log });
    if (cacheable && answer.reusable) {
      const encoded = encodeAnswer(answer);
      challenges.put(ticket, { sessionId, amount: amountKey, merchantId: answer.reusable.merchantId }, encoded, answer.reusable.until);
      return sendEncoded(reply, encoded);
    }
    return reply.code(answer.status).headers(answer.headers).send(answer.body);
  };
  for (const url of X402_PATHS) addRoute(app, docFor(url), {}, handler);
}

/**
 * Params and query as the zod schemas read them, without running them on the common shapes: an id
 * of 1–64 characters, and no query or only one ?amount=. Anything else goes through the schemas,
 * whose refusal names the field.
 */
function readInput(request: FastifyRequest): { sessionId: string; query: z.output<typeof Query> } {
  const { sessionId } = request.params as { sessionId?: unknown };
  const query = request.query as Record<string, unknown>;
  let plain = typeof sessionId === 'string' && sessionId.length >= 1 && sessionId.length <= SESSION_ID_MAX;
  for (const key in query) if (key !== 'amount' || typeof query[key] !== 'string') plain = false;
  if (plain) return { sessionId: sessionId as string, query: typeof query.amount === 'string' ? { amount: query.amount } : {} };
  return { sessionId: validate(Params, request.params).sessionId, query: validate(Query, request.query) };
}

const JSON_TYPE = 'application/json; charset=utf-8';

function encodeAnswer(answer: Answer): EncodedChallenge {
  const headers = { ...answer.headers, 'content-type': JSON_TYPE };
  return { status: answer.status, headers, withCors: { ...CORS_HEADERS, ...headers }, body: Buffer.from(JSON.stringify(answer.body)) };
}

const SESSION_ID = /^[A-Za-z0-9_-]{1,64}$/;
const AMOUNT_ONLY = /^amount=([0-9.]{1,32})$/;

/**
 * The cached challenge served before routing (http/app.ts FastLane): a GET of either path, an id
 * and an `?amount=` that need no decoding, no proof header, and a cache hit. Anything else, the
 * route answers, and its answer is the same.
 */
export function challengeLane(context: AppContext, challenges: ChallengeCache): FastLane {
  const paths = X402_PATHS.map((url) => ({ prefix: url.slice(0, url.indexOf('{')), route: url.replace('{sessionId}', ':sessionId') }));
  return (request, _response, send) => {
    if (request.method !== 'GET' || request.headers['x-payment'] !== undefined || request.headers['payment-signature'] !== undefined) return false;
    const url = request.url ?? '';
    const path = paths.find((p) => url.startsWith(p.prefix));
    if (!path) return false;
    const query = url.indexOf('?', path.prefix.length);
    const sessionId = url.slice(path.prefix.length, query < 0 ? undefined : query);
    if (!SESSION_ID.test(sessionId)) return false;
    let amount = '';
    if (query >= 0) {
      const match = AMOUNT_ONLY.exec(url.slice(query + 1));
      if (!match) return false;
      amount = match[1]!;
    }
    const cached = challenges.get(sessionId, amount, context.now());
    if (!cached) return false;
    context.metrics.x402ChallengesCached.inc();
    send({ route: path.route, status: cached.status, headers: cached.withCors, body: cached.body });
    return true;
  };
}

function sendEncoded(reply: FastifyReply, encoded: EncodedChallenge): FastifyReply {
  return reply.code(encoded.status).headers(encoded.headers).send(encoded.body);
}

function header(request: FastifyRequest, name: string): string | undefined {
  const value = request.headers[name];
  return Array.isArray(value) ? value.join(',') : value;
}
