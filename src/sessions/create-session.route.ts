import type { FastifyInstance, FastifyRequest } from 'fastify';
import { presentedApiKey, presentedKeyMode, requireMerchant } from '../auth/api-key-auth.ts';
import type { AppContext } from '../context.ts';
import { ErrorResponse } from '../http/errors.ts';
import { numberText } from '../http/json.ts';
import { addRoute, type RouteDoc } from '../http/routes.ts';
import { validate } from '../http/validation.ts';
import { createPaymentSessionJson, draftSession, type NewSessionInput, type SessionDraft } from './create-session.ts';
import { createSessionWithApiKey } from './create-session-postgres.ts';
import { limitCreation } from './creation-limit.ts';
import { checkIdempotencyKey } from './idempotency.ts';
import { BODY_LIMIT, CreateSessionBody, refusePayoutWalletFields, SESSION_EXAMPLES, SESSION_WRITE_REFUSALS, SessionCreated } from './schemas.ts';

const doc: RouteDoc = {
  method: 'POST',
  url: '/api/checkout/v2/payment_session',
  operationId: 'createPaymentSession',
  tag: 'Payment sessions',
  summary: 'Create a payment session (E1)',
  description:
    "Creates a session and returns its id and the hosted payment page URL. Send `Idempotency-Key` to make retries safe. One API key (or one merchant's bearer tokens) may create `TILL_SESSIONS_PER_MINUTE_PER_KEY` sessions a minute (6000 by default), counted across instances: past that, 429 `rate_limited` with Retry-After.",
  security: 'apiKey',
  scope: 'sessions:write',
  body: CreateSessionBody,
  bodyExample: SESSION_EXAMPLES.create,
  responses: {
    ...SESSION_WRITE_REFUSALS,
    201: { description: 'Session created', schema: SessionCreated, example: SESSION_EXAMPLES.answer },
    409: { description: '`orderId` already used by this merchant, or the Idempotency-Key is in flight', schema: ErrorResponse },
    422: { description: 'Idempotency-Key reused with a different body', schema: ErrorResponse },
    429: { description: 'Too many sessions created with this key this minute; Retry-After says when to try again', schema: ErrorResponse },
    503: { description: 'The currency has no fresh exchange rate right now', schema: ErrorResponse },
  },
};

/** E1's headers and body, checked: the Idempotency-Key and the session's fields. */
function readRequest(request: FastifyRequest): { idempotencyKey: string | undefined; input: NewSessionInput } {
  const idempotencyKey = checkIdempotencyKey(request.headers['idempotency-key']);
  refusePayoutWalletFields(request.body);
  const input = validate(CreateSessionBody, request.body);
  // Money is read from the digits the client sent, never through a float.
  const amount = numberText(request.body, 'amount') ?? input.amount;
  const minAmount = input.minAmount == null ? input.minAmount : (numberText(request.body, 'minAmount') ?? input.minAmount);
  return { idempotencyKey, input: { ...input, amount, minAmount } };
}

/** E1 checked before its key is: a request without a valid key is still refused as such (401) before anything of its body is judged. */
async function checkBeforeKey(
  context: AppContext,
  request: FastifyRequest,
): Promise<{ idempotencyKey: string | undefined; draft: SessionDraft; buyerEmail: string | null | undefined }> {
  try {
    const { idempotencyKey, input } = readRequest(request);
    // The key's prefix names the mode; the statement that writes the session checks the key itself.
    return { idempotencyKey, draft: await draftSession(context, input, 'api', presentedKeyMode(request) ?? 'sandbox'), buyerEmail: input.buyerEmail };
  } catch (error) {
    await requireMerchant(context, request);
    throw error;
  }
}

export function registerCreateSession(app: FastifyInstance, context: AppContext): void {
  addRoute(app, doc, { bodyLimit: BODY_LIMIT }, async (request, reply) => {
    const apiKey = context.dbKind === 'postgres' ? presentedApiKey(request) : undefined;
    let created: string;
    if (apiKey !== undefined) {
      // One round trip: the request is checked first, then the key and the insert go in one statement.
      const { idempotencyKey, draft, buyerEmail } = await checkBeforeKey(context, request);
      created = JSON.stringify(await createSessionWithApiKey(context, apiKey, draft, { idempotencyKey, requestBody: request.body, buyerEmail }));
    } else {
      const { merchantId, walletConfigured, keyHash, mode } = await requireMerchant(context, request);
      await limitCreation(context, keyHash !== undefined ? { keyHash } : { merchantId }, context.now());
      const { idempotencyKey, input } = readRequest(request);
      created = await createPaymentSessionJson(context, merchantId, input, {
        createdVia: 'api',
        mode,
        walletConfigured,
        requestBody: request.body,
        ...(idempotencyKey ? { idempotencyKey } : {}),
      });
    }
    return reply.code(201).type('application/json; charset=utf-8').send(created);
  });
}
