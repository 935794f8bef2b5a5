import type { FastifyInstance } from 'fastify';
import { requireMerchant } from '../auth/api-key-auth.ts';
import { newId } from '../common/ids.ts';
import type { AppContext } from '../context.ts';
import type { Db } from '../db/index.ts';
import { ErrorResponse } from '../http/errors.ts';
import { addRoute, type RouteDoc } from '../http/routes.ts';
import { validate } from '../http/validation.ts';
import { checkIdempotencyKey, runIdempotently } from './idempotency.ts';
import { BODY_LIMIT, CreateSessionBody, SESSION_WRITE_REFUSALS, SessionCreated } from './schemas.ts';
import { insertSession } from './sessions.ts';
import { checkTerms, parseMoneyField, parseQuotableCurrency } from './terms.ts';
import { payabilityWarnings, sessionCreatedBody } from './views.ts';

const doc: RouteDoc = {
  method: 'POST',
  url: '/api/checkout/v2/payment_session',
  tag: 'Payment sessions',
  summary: 'Create a payment session (E1)',
  description: 'Creates a session and returns its id and the hosted payment page URL. Send `Idempotency-Key` to make retries safe.',
  security: 'apiKey',
  body: CreateSessionBody,
  responses: {
    ...SESSION_WRITE_REFUSALS,
    201: { description: 'Session created', schema: SessionCreated },
    409: { description: '`orderId` already used by this merchant, or the Idempotency-Key is in flight', schema: ErrorResponse },
    422: { description: 'Idempotency-Key reused with a different body', schema: ErrorResponse },
    503: { description: 'The currency has no fresh exchange rate right now', schema: ErrorResponse },
  },
};

export function registerCreateSession(app: FastifyInstance, context: AppContext): void {
  addRoute(app, doc, { bodyLimit: BODY_LIMIT }, async (request, reply) => {
    const { merchantId, walletConfigured } = await requireMerchant(context, request);
    const idempotencyKey = checkIdempotencyKey(request.headers['idempotency-key']);
    const input = validate(CreateSessionBody, request.body);
    const { currency, exponent } = await parseQuotableCurrency(input.currency, context.rates);
    const amountMinor = parseMoneyField(request.body, 'amount', exponent, currency);
    const editable = input.editable ?? false;
    const minAmountMinor = input.minAmount == null ? null : parseMoneyField(request.body, 'minAmount', exponent, currency);
    checkTerms({ amountMinor, currency, minAmountMinor, editable });

    const now = context.now();
    const orderType = input.orderType ?? 'TRANSIENT';
    const insert = async (trx: Db) => {
      const sessionId = newId('ps_');
      await insertSession(trx, {
        id: sessionId,
        merchant_id: merchantId,
        order_id: input.orderId ?? null,
        order_type: orderType,
        status: 'OPEN',
        amount_minor: amountMinor,
        currency,
        min_amount_minor: minAmountMinor,
        editable: editable ? 1 : 0,
        concept: input.concept ?? null,
        success_url: input.successUrl ?? null,
        cancel_url: input.cancelUrl ?? null,
        fail_url: input.failUrl ?? null,
        pay_to: null,
        expires_at: orderType === 'STATIC' ? null : now + context.config.sessionTtlSeconds * 1000,
        created_at: now,
        updated_at: now,
        version: 1,
      });
      context.metrics.sessionsCreated.inc();
      return { status: 201, body: JSON.stringify(sessionCreatedBody(context.config.baseUrl, sessionId, payabilityWarnings(merchantId, { walletConfigured }))) };
    };

    const response = idempotencyKey
      ? await runIdempotently(context.db, context.dbKind, { merchantId, key: idempotencyKey, requestBody: request.body, now }, insert)
      : await insert(context.db);
    return reply.code(response.status).type('application/json; charset=utf-8').send(response.body);
  });
}
