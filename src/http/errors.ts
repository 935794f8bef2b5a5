import type { FastifyReply } from 'fastify';
import { z } from 'zod';
import { ERROR_CATALOGUE, type ErrorCode, type TillError } from '../common/errors.ts';

/** Every code of the closed catalogue, in the catalogue's order, with its status and what the docs say of it. */
export const ERROR_CODES = (Object.keys(ERROR_CATALOGUE) as ErrorCode[]).map((code) => ({
  code,
  status: ERROR_CATALOGUE[code].status,
  meaning: ERROR_CATALOGUE[code].meaning,
}));

/** The error body's schema, for the route docs (OpenAPI `Error`); `code` is one of the catalogue's. */
export const ErrorResponse = z
  .object({
    error: z.object({
      code: z
        .enum(ERROR_CODES.map((entry) => entry.code))
        .meta({ description: "One of the closed catalogue of codes; each code's status and meaning are listed under `x-error-codes` at the document's root" }),
      message: z.string(),
      field: z.string().optional(),
    }),
  })
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

/**
 * Answers a refusal with the status the catalogue gives its code, and Retry-After where it has one;
 * `extra` goes into `error`, `beside` next to it (`/readyz`'s `status`).
 */
export function sendError(reply: FastifyReply, error: TillError, extra: Record<string, unknown> = {}, beside: Record<string, unknown> = {}): FastifyReply {
  if (error.retryAfterSeconds !== undefined) reply.header('retry-after', String(error.retryAfterSeconds));
  return reply.code(error.status).send({ ...beside, ...errorBody(error, extra) });
}
