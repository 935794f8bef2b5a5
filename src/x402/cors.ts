/** x402 routes are public and called from browsers too, so CORS allows them and exposes the x402 headers. */
export const CORS_HEADERS = {
  'access-control-allow-origin': '*',
  'access-control-allow-methods': 'GET, OPTIONS',
  'access-control-allow-headers': 'X-PAYMENT, PAYMENT-SIGNATURE, Content-Type, Access-Control-Expose-Headers',
  'access-control-expose-headers': 'PAYMENT-REQUIRED, PAYMENT-RESPONSE, X-PAYMENT-RESPONSE, Retry-After',
  'access-control-max-age': '600',
};
