import { z } from 'zod';
/** The error body's schema, for the route docs (OpenAPI `Error`). */
export const ErrorResponse = z
  .object({ error: z.object({ code: z.string(), message: z.string(), field: z.string().optional() }) })
  .meta({ id: 'Error' });

/** The 401 of every route that takes an API key. */
export const UNAUTHORIZED_RESPONSE = { description: 'Missing, unknown, revoked or wrong-mode API key', schema: ErrorResponse };

/**
 * The one error shape of the whole API: `{ error: { code, message, field? } }`.
 * Every refusal names what was refused; no stack trace ever leaves the process.
 */
export class ApiError extends Error {
  readonly status: number;
  readonly code: string;
  readonly field: string | undefined;
  readonly headers: Record<string, string>;
  readonly extra: Record<string, unknown>;

  constructor(status: number, code: string, message: string, options: { field?: string; headers?: Record<string, string>; extra?: Record<string, unknown> } = {}) {
    super(message);
    this.status = status;
    this.code = code;
    this.field = options.field;
    this.headers = options.headers ?? {};
    this.extra = options.extra ?? {};
  }

  toBody(): ErrorBody {
    return { error: { code: this.code, message: this.message, ...(this.field ? { field: this.field } : {}), ...this.extra } };
  }
}

export type ErrorBody = { error: { code: string; message: string; field?: string } & Record<string, unknown> };

export const invalidField = (field: string, message: string) => new ApiError(400, 'invalid_field', `${field} ${message}`, { field });
export const unauthorized = (message = 'A valid API key is required in the X-SC-ApiKey header') => new ApiError(401, 'unauthorized', message);
export const notFound = (what: string) => new ApiError(404, 'not_found', `${what} was not found`);
