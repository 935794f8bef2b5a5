import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ApiError } from './errors.ts';

/**
 * JSON bodies are parsed with each number's source text kept aside, so that money is
 * read from the digits the client sent and never passes through a float.
 */
const numberSources = new WeakMap<object, Map<string, string>>();

export function parseJsonKeepingNumberText(text: string): unknown {
  return JSON.parse(text, function (this: object, key: string, value: unknown, context?: { source?: string }) {
    if (typeof value === 'number' && context?.source !== undefined) {
      let sources = numberSources.get(this);
      if (!sources) numberSources.set(this, (sources = new Map()));
      sources.set(key, context.source);
    }
    return value;
  });
}

/** The exact text of a number property as the client wrote it, e.g. "10.50" or "1e2". */
export function numberText(holder: unknown, key: string): string | undefined {
  if (typeof holder !== 'object' || holder === null) return undefined;
  return numberSources.get(holder)?.get(key);
}

export function registerJsonParser(app: FastifyInstance): void {
  app.removeContentTypeParser(['application/json']);
  app.addContentTypeParser(/^application\/([\w.+-]+\+)?json$/, { parseAs: 'string' }, (_request: FastifyRequest, body: string | Buffer, done) => {
    const text = body.toString();
    if (text.trim() === '') return done(new ApiError(400, 'invalid_json', 'The request body is empty; a JSON object was expected'), undefined);
    try {
      done(null, parseJsonKeepingNumberText(text));
    } catch (error) {
      done(new ApiError(400, 'invalid_json', `The request body is not valid JSON: ${(error as Error).message}`), undefined);
    }
  });
}
