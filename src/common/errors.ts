/**
 * The closed catalogue of API error codes. Each code has one HTTP status, one line for the docs
 * and one message template; domain code throws `TillError` with a code and its parameters, and
 * the HTTP edge turns it into `{ error: { code, message, field? } }` with the status below.
 * docs/api.md and the OpenAPI document list this table; a test checks that they agree.
 */
type Entry<P> = {
  status: number;
  /** What the code means, for the docs. */
  meaning: string;
  message: (params: P) => string;
  /** Sent as Retry-After unless the thrower gives its own. */
  retryAfterSeconds?: number;
};

const entry = <P extends object = Record<never, never>>(
  status: number,
  meaning: string,
  message: (params: P) => string,
  options: { retryAfterSeconds?: number } = {},
): Entry<P> => ({ status, meaning, message, ...options });

type Field = { field: string };

export const ERROR_CATALOGUE = {
  invalid_field: entry(
    400,
    'A field, parameter or header is missing, malformed or out of bounds; `field` names it',
    (p: Field & { problem: string }) => `${p.field} ${p.problem}`,
  ),
  unknown_field: entry(
    400,
    'The body or query has a field this endpoint does not take; `field` names it',
    (p: Field) => `Unknown field "${p.field}" is not accepted`,
  ),
  unsupported_chain: entry(
    400,
    'A chain that is not accepted (by the merchant, or by Till); `field` names it and the message lists the accepted ones',
    (p: Field & { chain: string; accepted: string[] }) =>
      `${p.field}: chain "${p.chain}" is not accepted; accepted: ${p.accepted.length ? p.accepted.join(', ') : 'none'}`,
  ),
  unsupported_token: entry(
    400,
    'A token that is not accepted on its chain (by the merchant, or by Till); `field` names it and the message lists the accepted ones',
    (p: Field & { chain: string; token: string; accepted: string[] }) =>
      `${p.field}: token "${p.token}" is not accepted on ${p.chain}; accepted: ${p.accepted.length ? p.accepted.join(', ') : 'none'}`,
  ),
  payout_wallet_not_settable: entry(
    400,
    'The body tries to set a payout wallet, which the payment API never changes; `field` names it',
    (p: Field) =>
      `Field "${p.field}" is refused: the payout wallet cannot be set or changed over the payment API; the merchant sets it in the dashboard under Settings → Payout wallet (/dashboard/settings), an operator with till merchant set-wallet`,
  ),
  invalid_payment_identifier: entry(
    400,
    "The x402 payment payload's payment-identifier `id` is not 16–128 characters of A–Z, a–z, 0–9, `-` and `_` (the extension's rule); `field` names it; nothing was charged",
    (p: Field & { problem: string }) => `${p.field} ${p.problem}`,
  ),
  invalid_json: entry(400, 'The body is empty or is not valid JSON', (p: { problem: string }) => `The request body ${p.problem}`),
  invalid_request: entry(
    400,
    'The request is malformed at the HTTP level (e.g. a Content-Length that does not match the body)',
    (p: { problem: string }) => p.problem,
  ),
  unauthorized: entry(
    401,
    'The API key is missing, unknown, revoked or of a mode the deployment does not serve (`TILL_MODES`); or the bearer token is expired, revoked, not for the payment API, or of a mode the deployment does not serve',
    (p: { presented: boolean; bearer?: boolean; because?: string }) =>
      p.because
        ? `The bearer token is refused: ${p.because}`
        : p.bearer
          ? 'The bearer token is not valid: it is expired, its client was revoked, or it is not for the payment API (audience {base_url}/checkout)'
          : p.presented
            ? 'The API key is not valid: it is unknown, revoked, or of a mode this deployment does not serve (sk_test_ keys need test mode, sk_live_ keys live mode: TILL_MODES)'
            : 'A valid API key is required in the X-SC-ApiKey header (or a bearer token in Authorization)',
  ),
  insufficient_scope: entry(
    403,
    'The credential is narrowed to scopes (a restricted API key, or a client-credentials token asked with `scope`) without the one this request needs; the message names it',
    (p: { scope: string }) =>
      `This credential lacks the scope ${p.scope}, which this request needs; use an API key or token with ${p.scope} (or a full key, or a token asked without scope)`,
  ),
  test_mode_only: entry(
    403,
    'The request makes test data, so it takes a test-mode credential (an sk_test_ key); a live one is refused',
    () => 'This request works only with a test-mode credential (an sk_test_ key), never a live one',
  ),
  not_found: entry(404, 'The object does not exist, belongs to another merchant, or the route is unknown', (p: { what: string }) => `${p.what} was not found`),
  method_not_allowed: entry(
    405,
    'The endpoint does not take this method; `Allow` lists the ones it takes',
    (p: { endpoint: string; allowed: string }) => `${p.endpoint} takes ${p.allowed} only`,
  ),
  session_settled: entry(409, 'The session has been paid and can no longer change', () => 'This session has been paid and can no longer change'),
  session_expired: entry(409, 'The session has expired and can no longer change', () => 'This session has expired and can no longer change'),
  session_changed: entry(
    409,
    'The session changed while it was being updated',
    () => 'The session changed while it was being updated; read it again and retry',
  ),
  payment_in_progress: entry(
    409,
    'A payment of the session is being settled; retry once it is resolved',
    () => 'A payment of this session is being settled; try again once it is resolved',
  ),
  order_id_in_use: entry(
    409,
    'Another session of this merchant already has this orderId',
    (p: Field & { orderId: string }) => `orderId "${p.orderId}" is already used by another session of this merchant`,
  ),
  idempotency_key_in_use: entry(
    409,
    'A request with this Idempotency-Key is still being processed',
    () => 'A request with this Idempotency-Key is still being processed; retry shortly',
  ),
  payment_identifier_reused: entry(
    409,
    'The x402 payment-identifier names a payment of another session, payer or amount; a retry repeats the first payment exactly, a new payment takes a new identifier; nothing was charged',
    (p: Field & { differs: 'session' | 'payer' | 'amount' }) =>
      `${p.field} already names a payment of another ${p.differs}; it is refused and nothing was charged: a retry must repeat the first payment (same session, payer and amount), a new payment needs a new identifier`,
  ),
  no_webhook_endpoint: entry(409, 'The merchant has no webhook URL set', () => 'No webhook URL is set for this merchant'),
  body_too_large: entry(413, 'The body is over 1 MiB (16 KiB on the session endpoints)', () => 'The request body is too large'),
  form_too_large: entry(
    413,
    'A form post has more fields or files than its form takes (a page form: 32 fields, no file; the logo form: 1 file, 8 fields); the message names the limit',
    (p: { found: string; takes: string }) => `The form has ${p.found}; this form takes at most ${p.takes}`,
  ),
  unsupported_media_type: entry(
    415,
    'The body is not JSON: Content-Type must be application/json (or a +json type), charset utf-8',
    (p: { mediaType?: string; charset?: string }) =>
      p.charset !== undefined
        ? `Content-Type charset must be utf-8, not ${p.charset}`
        : `Content-Type must be application/json${p.mediaType ? `, not ${p.mediaType}` : ''}`,
  ),
  idempotency_key_reused: entry(
    422,
    'This Idempotency-Key was used before with a different body',
    () => 'This Idempotency-Key was already used with a different request body',
  ),
  no_pay_to: entry(
    422,
    'The merchant has no payout wallet, so the session cannot be paid yet',
    () =>
      'The merchant has no payout wallet configured, so no payTo can be quoted; the merchant sets one in the dashboard under Settings → Payout wallet (/dashboard/settings), or an operator runs: till merchant set-wallet MERCHANT_ID 0x…',
  ),
  rate_limited: entry(
    429,
    'Too many requests of one kind; Retry-After says when to try again',
    (p: { what: string; retryAfterSeconds: number }) => `Too many ${p.what}; retry after ${p.retryAfterSeconds} s`,
  ),
  internal_error: entry(
    500,
    'Something failed on our side; `requestId` identifies it in the logs',
    () => 'Something went wrong on our side; the request id identifies it in our logs',
  ),
  rate_unavailable: entry(
    503,
    'No fresh exchange rate for the currency; nothing was charged',
    (p: { currency: string }) => `No fresh exchange rate for ${p.currency}; try again shortly`,
    { retryAfterSeconds: 30 },
  ),
  facilitator_unavailable: entry(
    503,
    "The x402 facilitator does not answer, fails, or asks to slow down; nothing was charged (Retry-After passes on the facilitator's own when it gave one)",
    (p: { retryAfterSeconds?: number; busy?: boolean }) =>
      p.busy
        ? `The payment facilitator asks for fewer requests; nothing was charged, try again in ${p.retryAfterSeconds ?? 10} s`
        : 'The payment facilitator does not answer; nothing was charged, try again shortly',
    { retryAfterSeconds: 10 },
  ),
  facilitator_refused: entry(
    502,
    "The x402 facilitator refused this service's request (its credentials, account or settings): the same on every retry until the operator fixes it; nothing was charged",
    () =>
      "The payment facilitator refused this service's request, so no payment can be taken here for now; nothing was charged. The operator has been alerted: retrying will not help",
  ),
  database_unreachable: entry(
    503,
    'The database does not answer; retry after Retry-After (an E1 sent again with its Idempotency-Key is never done twice)',
    () => 'The database does not answer; nothing was done, try again shortly',
    { retryAfterSeconds: 5 },
  ),
  sandbox_unavailable: entry(
    503,
    'The sandbox chain does not answer (sandbox routes only)',
    () => 'The sandbox chain does not answer; start it with `till sandbox` or `npm start`',
  ),
} as const;

export type ErrorCode = keyof typeof ERROR_CATALOGUE;
type ParamsOf<C extends ErrorCode> = Parameters<(typeof ERROR_CATALOGUE)[C]['message']>[0];
type Args<C extends ErrorCode> = Record<never, never> extends ParamsOf<C> ? [params?: ParamsOf<C>] : [params: ParamsOf<C>];

/** A refusal named by a catalogue code; the edge maps it to HTTP. */
export class TillError<C extends ErrorCode = ErrorCode> extends Error {
  readonly code: C;
  readonly status: number;
  readonly field: string | undefined;
  readonly retryAfterSeconds: number | undefined;

  constructor(code: C, ...[params]: Args<C>) {
    const template = ERROR_CATALOGUE[code] as Entry<ParamsOf<C>>;
    super(template.message((params ?? {}) as ParamsOf<C>));
    this.code = code;
    this.status = template.status;
    const given = (params ?? {}) as { field?: unknown; retryAfterSeconds?: unknown };
    this.field = typeof given.field === 'string' ? given.field : undefined;
    this.retryAfterSeconds = typeof given.retryAfterSeconds === 'number' ? given.retryAfterSeconds : template.retryAfterSeconds;
  }
}

export const invalidField = (field: string, problem: string) => new TillError('invalid_field', { field, problem });
