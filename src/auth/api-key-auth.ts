import type { FastifyRequest } from 'fastify';
import type { AppContext } from '../http/context.ts';
import { unauthorized } from '../http/errors.ts';
import { authenticateApiKey, type AuthenticatedKey } from '../merchants/api-keys.ts';

export const API_KEY_HEADER = 'x-sc-apikey';

/** The merchant behind the request's X-SC-ApiKey, or a 401 in the common error shape. */
export async function requireMerchant(context: AppContext, request: FastifyRequest): Promise<AuthenticatedKey> {
  const header = request.headers[API_KEY_HEADER];
  const presented = Array.isArray(header) ? undefined : header;
  if (!presented) throw unauthorized();
  const key = await authenticateApiKey(context.db, presented.trim(), context.config.mode);
  if (!key) throw unauthorized('The API key is not valid: it is unknown, revoked, or not for this mode (sk_test_ keys work only in the sandbox, sk_live_ keys only with a real facilitator)');
  return key;
}
