import type { FastifyInstance, FastifyRequest } from 'fastify';
import { TillError } from '../common/errors.ts';

/**
 * JSON bodies are parsed with each number's source text kept aside, so that money is
 * read from the digits the client sent and never passes through a float.
 */
const numberSources = new WeakMap<object, Map<string, string>>();

export function parseJsonKeepingNumberText(text: string): unknown {
  const value: unknown = JSON.parse(text);
  // Where every number is written as JavaScript writes it back ("12.5", "100"), its text is the
  // number's own, and numberText's callers fall back to the number: no text need be kept (a
  // reviver costs several times the plain parse). Any other spelling ("10.50", "1e2") keeps them all.
  return numbersWrittenCanonically(text) ? value : parseKeepingSources(text);
}

/** Whether each number of valid JSON text is written as String(number) writes it; strings are skipped. */
function numbersWrittenCanonically(text: string): boolean {
  const length = text.length;
  for (let i = 0; i < length; i++) {
    const code = text.charCodeAt(i);
    if (code === 0x22) {
      // A string: to its closing quote, past escaped characters.
      for (i++; i < length; i++) {
        const inner = text.charCodeAt(i);
        if (inner === 0x5c) i++;
        else if (inner === 0x22) break;
      }
    } else if (code === 0x2d || (code >= 0x30 && code <= 0x39)) {
      // A number (outside strings, nothing else in valid JSON starts with "-" or a digit): to its last character.
      const start = i;
      while (i + 1 < length && isNumberCharacter(text.charCodeAt(i + 1))) i++;
      const token = text.slice(start, i + 1);
      if (String(Number(token)) !== token) return false;
    }
  }
  return true;
}

/** Digits, ".", "e", "E", "+" and "-". */
const isNumberCharacter = (code: number) => (code >= 0x30 && code <= 0x39) || code === 0x2e || code === 0x65 || code === 0x45 || code === 0x2b || code === 0x2d;

function parseKeepingSources(text: string): unknown {
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

/** The exact text of a number property as the client wrote it, e.g. "10.50" or "1e2"; undefined when it is the number's own ("12.5"). */
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
  // A client sends the same header on every request: the last one accepted is not read again.
  if (header === lastAccepted && header !== undefined) return undefined;
  const problem = contentTypeProblem(header);
  if (!problem) lastAccepted = header;
  return problem;
}

let lastAccepted: string | undefined;

function contentTypeProblem(header: string | undefined): TillError | undefined {
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
