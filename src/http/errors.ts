import type { FastifyReply } from 'fastify';
import { z } from 'zod';
import { TillError } from '../common/errors.ts';

/** The error body's schema, for the route docs (OpenAPI `Error`). */
export const ErrorResponse = z
  .object({ error: z.object({ code: z.string(), message: z.string(), field: z.string().optional() }) })
  .meta({ id: 'Error' });

/** The 401 of every route that takes an API key. */
export const UNAUTHORIZED_RESPONSE = { description: 'Missing, unknown, revoked or wrong-mode API key', schema: ErrorResponse };

export type ErrorBody = { error: { code: string; message: string; field?: string } & Record<string, unknown> };

/**
 * The one error shape of the whole API: `{ error: { code, message, field? } }`.
 * Every refusal names what was refused; no stack trace ever leaves the process.
 */
export function errorBody(error: TillError, extra: Record<string, unknown> = {}): ErrorBody {
  return { error: { code: error.code, message: error.message, ...(error.field ? { field: error.field } : {}), ...extra } };
}

/** Answers a refusal with the status the catalogue gives its code, and Retry-After where it has one. */
export function sendError(reply: FastifyReply, error: TillError, extra: Record<string, unknown> = {}): FastifyReply {
  if (error.retryAfterSeconds !== undefined) reply.header('retry-after', String(error.retryAfterSeconds));
  return reply.code(error.status).send(errorBody(error, extra));
}
