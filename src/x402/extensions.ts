/**
 * The x402 v2 extensions E3 speaks, as their published specs define them (x402's
 * specs/extensions/payment_identifier.md and bazaar.md; the `@x402/extensions` package is the
 * reference, and x402/extensions.test.ts holds these objects equal to what its helpers build):
 *
 * - `payment-identifier`: every challenge declares it (optional); a client names its payment with
 *   `info.id` and a retry carrying the same id gets the first outcome (x402/pay.ts).
 * - `bazaar`: the challenges of a link its merchant made discoverable describe how to call it and
 *   what it answers, for agents and the catalogues that index them.
 *
 * Built here rather than by the package at run time: they are constant JSON, and the paid path
 * stays free of the package's validators.
 */

export const PAYMENT_IDENTIFIER = 'payment-identifier';
export const BAZAAR = 'bazaar';

const ID_MIN = 16;
const ID_MAX = 128;
const ID_PATTERN = /^[a-zA-Z0-9_-]+$/;

/** Where a payload's identifier is, as the error names it. */
export const PAYMENT_IDENTIFIER_FIELD = `extensions.${PAYMENT_IDENTIFIER}.info.id`;

/** Why `id` is not a payment identifier the extension allows, or undefined when it is one. */
export function paymentIdentifierProblem(id: unknown): string | undefined {
  if (typeof id !== 'string') return 'must be a string';
  if (id.length < ID_MIN || id.length > ID_MAX) return `must be ${ID_MIN} to ${ID_MAX} characters long (it has ${id.length})`;
  if (!ID_PATTERN.test(id)) return 'may contain only letters A–Z and a–z, digits, hyphens and underscores';
  return undefined;
}

const JSON_SCHEMA_2020_12 = 'https://json-schema.org/draft/2020-12/schema';

/** The server's declaration: identifiers are taken, not required. */
const PAYMENT_IDENTIFIER_DECLARATION = {
  info: { required: false },
  schema: {
    $schema: JSON_SCHEMA_2020_12,
    type: 'object',
    properties: {
      required: { type: 'boolean' },
      id: { type: 'string', minLength: ID_MIN, maxLength: ID_MAX, pattern: ID_PATTERN.source },
    },
    required: ['required'],
  },
} as const;

/** What E3 answers once paid, as the bazaar `output` shows it. */
const PAID_EXAMPLE = {
  status: 'SUCCESS',
  paymentSessionId: 'ps_…',
  payTo: '0x…',
  receipt: 'https://…/tx/0x…',
  paymentId: 'TX-…',
};
const PAID_SCHEMA = {
  properties: {
    status: { type: 'string', const: 'SUCCESS' },
    paymentSessionId: { type: 'string' },
    payTo: { type: 'string' },
    receipt: { type: 'string', description: 'The transaction on the block explorer' },
    paymentId: { type: 'string', description: 'The order id; its receipt is GET /checkout/v2/orders/receipt/{paymentId}' },
  },
  required: ['status', 'paymentSessionId', 'payTo', 'receipt', 'paymentId'],
};

/** What a link's bazaar description depends on. */
export type DiscoveryTerms = { editable: boolean; suggestedAmount: string };

/**
 * The bazaar extension of a link's challenge: an HTTP GET whose only query parameter is the
 * buyer-chosen `amount` of an editable link (required there, absent otherwise), answering the paid
 * JSON. The same object `declareDiscoveryExtension` builds and the resource server extension
 * enriches with the request's method.
 */
export function bazaarDeclaration(terms: DiscoveryTerms) {
  const queryParams: Record<string, string> = terms.editable ? { amount: terms.suggestedAmount } : {};
  const querySchema = terms.editable
    ? { properties: { amount: { type: 'string', description: 'The amount the buyer pays, in the link’s currency' } }, required: ['amount'] }
    : { properties: {} };
  return {
    info: {
      input: { type: 'http', queryParams, method: 'GET' },
      output: { type: 'json', example: PAID_EXAMPLE },
    },
    schema: {
      $schema: JSON_SCHEMA_2020_12,
      type: 'object',
      properties: {
        input: {
          type: 'object',
          properties: {
            type: { type: 'string', const: 'http' },
            method: { type: 'string', enum: ['GET'] },
            queryParams: { type: 'object', ...querySchema },
          },
          required: ['type', 'method'],
          additionalProperties: false,
        },
        output: {
          type: 'object',
          properties: { type: { type: 'string' }, example: { type: 'object', ...PAID_SCHEMA } },
          required: ['type'],
        },
      },
      required: ['input'],
    },
  };
}

/** The `extensions` of a challenge: payment-identifier always, bazaar for a discoverable link. */
export function challengeExtensions(discovery: DiscoveryTerms | undefined): Record<string, unknown> {
  return discovery
    ? { [PAYMENT_IDENTIFIER]: PAYMENT_IDENTIFIER_DECLARATION, [BAZAAR]: bazaarDeclaration(discovery) }
    : { [PAYMENT_IDENTIFIER]: PAYMENT_IDENTIFIER_DECLARATION };
}
