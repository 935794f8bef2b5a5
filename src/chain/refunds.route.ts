import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { requireMerchant } from '../auth/api-key-auth.ts';
import { TillError } from '../common/errors.ts';
import type { AppContext } from '../context.ts';
import { ErrorResponse, UNAUTHORIZED_RESPONSE } from '../http/errors.ts';
import { addRoute, type RouteRegistrar } from '../http/routes.ts';
import { validate, validateQuery } from '../http/validation.ts';
import { findRefund, type RefundReadScope } from '../payments/refunds.ts';
import type { RailsByMode } from './rails.ts';
import {
  CreateRefundBody,
  listRefunds,
  PreparedRefund,
  PrepareRefundBody,
  PrepareRefundParams,
  preparedView,
  Refund,
  RefundIdField,
  RefundList,
  RefundListQuery,
  refundView,
} from './refund-schemas.ts';
import { makeRefund, prepareRefund } from './refunds.ts';

const TAG = 'Refunds';
const RefundParams = z.strictObject({ refundId: RefundIdField });
const FORBIDDEN = { description: 'A client-credentials token issued without this scope (`insufficient_scope`)', schema: ErrorResponse };
const REFUSED = {
  description:
    'A field is refused and `error.field` names it (paymentId, amount, validBefore, nonce, signature, reason); nothing was recorded and nothing moved',
  schema: ErrorResponse,
};
const NO_ORDER = { description: 'No settled payment with this order id for this merchant in the credential’s mode', schema: ErrorResponse };

/** The merchant and mode a request acts in; its credential's scopes are checked against the route's (`scope` in its doc). */
async function refundScope(context: AppContext, request: Parameters<typeof requireMerchant>[1]): Promise<RefundReadScope> {
  const merchant = await requireMerchant(context, request);
  return { merchantId: merchant.merchantId, mode: merchant.mode };
}

/** A refund just made or read, with its order id, as the API answers it. */
async function readRefund(context: AppContext, scope: RefundReadScope, refundId: string) {
  const refund = await findRefund(context.db, scope, refundId);
  if (!refund) throw new TillError('not_found', { what: `Refund ${refundId}` });
  return refundView(refund);
}

/**
 * Refunds over the payment API, for a merchant's server (API key, or client-credentials token with
 * `refunds:write` / `refunds:read`): the same flow as the dashboard's form (chain/refunds.ts), in the
 * credential's mode only.
 */
export const registerRefundRoutes =
  (rails: RailsByMode): RouteRegistrar =>
  (app: FastifyInstance, context: AppContext) => {
    addRoute(
      app,
      {
        method: 'POST',
        url: '/api/checkout/v2/payments/{paymentId}/refunds/prepare',
        scope: 'refunds:write',
        operationId: 'prepareRefund',
        tag: TAG,
        summary: 'Prepare a refund: the typed data its payout wallet signs',
        description:
          'Answers the EIP-712 typed data of the EIP-3009 authorization that moves `amount` USDC from the payout wallet that received the payment back to its payer, with a fresh nonce, valid at once for 10 minutes. Nothing is recorded: sign it with the payout wallet’s key and post it to `POST /api/checkout/v2/refunds`. Needs `refunds:write`.',
        security: 'apiKey',
        params: PrepareRefundParams,
        body: PrepareRefundBody,
        responses: {
          200: { description: 'The typed data to sign', schema: PreparedRefund },
          400: REFUSED,
          401: UNAUTHORIZED_RESPONSE,
          403: FORBIDDEN,
          404: NO_ORDER,
        },
      },
      {},
      async (request) => {
        const scope = await refundScope(context, request);
        const { paymentId } = validate(PrepareRefundParams, request.params);
        const { amount } = validate(PrepareRefundBody, request.body);
        const { payment, typedData } = await prepareRefund(context, scope, paymentId, amount);
        return preparedView(payment.public_order_id!, amount.trim(), typedData, context.now());
      },
    );

    addRoute(
      app,
      {
        method: 'POST',
        url: '/api/checkout/v2/refunds',
        scope: 'refunds:write',
        operationId: 'createRefund',
        tag: TAG,
        summary: 'Make a refund from a signed authorization',
        description:
          'Takes the prepared fields and the payout wallet’s signature. The checks are the dashboard’s: the amount against what is left of the payment (atomically), the validity window, the nonce, and that the payment’s payout wallet signed exactly these terms. Then the facilitator submits it and the chain is read at once; only the chain decides its status (PENDING until then; `refund.succeeded` / `refund.failed` webhook events when decided). A refused refund records nothing and moves nothing. Needs `refunds:write`.',
        security: 'apiKey',
        body: CreateRefundBody,
        responses: {
          201: { description: 'The refund, as the chain has decided it so far', schema: Refund },
          400: REFUSED,
          401: UNAUTHORIZED_RESPONSE,
          403: FORBIDDEN,
          404: NO_ORDER,
          503: { description: 'No facilitator is configured for this mode; nothing was recorded', schema: ErrorResponse },
        },
      },
      {},
      async (request, reply) => {
        const scope = await refundScope(context, request);
        const body = validate(CreateRefundBody, request.body);
        const services = rails[scope.mode];
        const refund = await makeRefund(context, services, scope, body.paymentId, { ...body, reason: body.reason }, { origin: 'api' });
        return reply.code(201).send(await readRefund(context, scope, refund.id));
      },
    );

    addRoute(
      app,
      {
        method: 'GET',
        url: '/api/checkout/v2/refunds/{refundId}',
        scope: 'refunds:read',
        operationId: 'getRefund',
        tag: TAG,
        summary: 'Read a refund',
        description: 'Needs `refunds:read` of a restricted key or narrowed token.',
        security: 'apiKey',
        params: RefundParams,
        responses: {
          200: { description: 'The refund', schema: Refund },
          400: { description: 'The refund id is malformed (`error.field` is refundId)', schema: ErrorResponse },
          401: UNAUTHORIZED_RESPONSE,
          403: FORBIDDEN,
          404: { description: 'No such refund for this merchant in the credential’s mode', schema: ErrorResponse },
        },
      },
      {},
      async (request) => {
        const scope = await refundScope(context, request);
        const { refundId } = validate(RefundParams, request.params);
        return readRefund(context, scope, refundId);
      },
    );

    addRoute(
      app,
      {
        method: 'GET',
        url: '/api/checkout/v2/refunds',
        scope: 'refunds:read',
        operationId: 'listRefunds',
        tag: TAG,
        summary: 'List refunds',
        description:
          'The merchant’s refunds of the credential’s mode, newest first, filtered by payment, session and status, a page at a time: pass `nextCursor` as `cursor` for the next page. Needs `refunds:read` of a restricted key or narrowed token.',
        security: 'apiKey',
        query: RefundListQuery,
        responses: {
          200: { description: 'A page of refunds', schema: RefundList },
          400: { description: 'A query parameter is unknown, repeated or invalid; `error.field` names it', schema: ErrorResponse },
          401: UNAUTHORIZED_RESPONSE,
          403: FORBIDDEN,
        },
      },
      {},
      async (request) => {
        const scope = await refundScope(context, request);
        return listRefunds(context.db, scope, validateQuery(RefundListQuery, request.query, { status: 'statuses' }));
      },
    );
  };
