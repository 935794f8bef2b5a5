import type { FastifyRequest } from 'fastify';
import { TillError } from '../common/errors.ts';
import type { AppContext } from '../context.ts';
import { type AuthenticatedKey, authenticateApiKey } from '../merchants/api-keys.ts';

export const API_KEY_HEADER = 'x-sc-apikey';

/** The merchant behind the request's X-SC-ApiKey, or a 401 in the common error shape. */
export async function requireMerchant(context: AppContext, request: FastifyRequest): Promise<AuthenticatedKey> {
  const header = request.headers[API_KEY_HEADER];
  const presented = Array.isArray(header) ? undefined : header;
  if (!presented) throw new TillError('unauthorized', { presented: false });
  const key = await authenticateApiKey(context.db, presented.trim(), context.config.mode);
  if (!key) throw new TillError('unauthorized', { presented: true });
  return key;
}
