import type { FastifyInstance, FastifyRequest } from 'fastify';
import { TillError } from '../common/errors.ts';

/**
 * JSON bodies are parsed with each number's source text kept aside, so that money is
 * read from the digits the client sent and never passes through a float.
 */
const numberSources = new WeakMap<object, Map<string, string>>();

export function parseJsonKeepingNumberText(text: string): unknown {
  return JSON.parse(text, function (this: object, key: string, value: unknown, context?: { source?: string }) {
    if (typeof value === 'number' && context?.source !== undefined) {
      let sources = numberSources.get(this);
      if (!sources) {
        sources = new Map();
        numberSources.set(this, sources);
      }
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

const JSON_MEDIA_TYPE = /^application\/(?:[\w.+-]+\+)?json$/;
const ACCEPTED_CHARSETS = new Set(['utf-8', 'utf8', 'us-ascii']);

/**
 * The one rule for request bodies: `application/json` or any `+json` type (RFC 6839), in any case,
 * with parameters (`charset=utf-8` is what .NET, Spring and OkHttp send). JSON is UTF-8 (RFC 8259),
 * so another charset is refused rather than misread. Undefined when the header is acceptable.
 */
export function jsonContentTypeProblem(header: string | undefined): TillError | undefined {
  const [mediaType = '', ...parameters] = (header ?? '').split(';');
  if (!JSON_MEDIA_TYPE.test(mediaType.trim().toLowerCase())) {
    return new TillError('unsupported_media_type', { mediaType: header ? mediaType.trim() : undefined });
  }
  for (const parameter of parameters) {
    const [name = '', value = ''] = parameter.split('=');
    const charset = value.trim().replace(/^"|"$/g, '').toLowerCase();
    if (name.trim().toLowerCase() === 'charset' && !ACCEPTED_CHARSETS.has(charset)) {
      return new TillError('unsupported_media_type', { charset });
    }
  }
  return undefined;
}

/** Every request body goes through this parser: JSON by the rule above, anything else 415. */
export function registerJsonParser(app: FastifyInstance): void {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'string' }, (request: FastifyRequest, body: string | Buffer, done) => {
    const problem = jsonContentTypeProblem(request.headers['content-type']);
    if (problem) return done(problem, undefined);
    const text = body.toString();
    if (text.trim() === '') return done(new TillError('invalid_json', { problem: 'is empty; a JSON object was expected' }), undefined);
    try {
      done(null, parseJsonKeepingNumberText(text));
    } catch (error) {
      done(new TillError('invalid_json', { problem: `is not valid JSON: ${(error as Error).message}` }), undefined);
    }
  });
}
