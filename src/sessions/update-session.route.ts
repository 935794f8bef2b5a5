import type { FastifyInstance } from 'fastify';
import { requireMerchant } from '../auth/api-key-auth.ts';
import type { AppContext } from '../context.ts';
import { ErrorResponse } from '../http/errors.ts';
import { numberText } from '../http/json.ts';
import { addRoute, type RouteDoc } from '../http/routes.ts';
import { validate } from '../http/validation.ts';
import { BODY_LIMIT, refusePayoutWalletFields, SESSION_EXAMPLES, SESSION_WRITE_REFUSALS, SessionCreated, UpdateSessionBody } from './schemas.ts';
import { updatePaymentSession } from './update-session.ts';

const doc: RouteDoc = {
  method: 'PUT',
  url: '/api/checkout/v2/payment_session',
  operationId: 'updatePaymentSession',
  tag: 'Payment sessions',
  summary: 'Update a payment session (E2)',
  description: 'Changes only the fields sent; `null` clears an optional field. Used for sessions that take several payments, such as donation links.',
  security: 'apiKey',
  scope: 'sessions:write',
  body: UpdateSessionBody,
  bodyExample: SESSION_EXAMPLES.update,
  responses: {
    ...SESSION_WRITE_REFUSALS,
    200: { description: 'Session updated', schema: SessionCreated, example: SESSION_EXAMPLES.answer },
    404: { description: 'No such session for this merchant', schema: ErrorResponse },
    409: {
      description: 'TRANSIENT session settled, expired or with a payment in progress; session archived from the dashboard; or orderId already used',
      schema: ErrorResponse,
    },
    503: { description: 'The new currency has no fresh exchange rate right now', schema: ErrorResponse },
  },
};

export function registerUpdateSession(app: FastifyInstance, context: AppContext): void {
  addRoute(app, doc, { bodyLimit: BODY_LIMIT }, async (request) => {
    const { merchantId, walletConfigured, mode } = await requireMerchant(context, request);
    refusePayoutWalletFields(request.body);
    const input = validate(UpdateSessionBody, request.body);
    // Money is read from the digits the client sent, never through a float.
    const amount = input.amount === undefined ? undefined : (numberText(request.body, 'amount') ?? input.amount);
    const minAmount = input.minAmount == null ? input.minAmount : (numberText(request.body, 'minAmount') ?? input.minAmount);
    return updatePaymentSession(context, merchantId, { ...input, amount, minAmount }, { walletConfigured, mode });
  });
}
