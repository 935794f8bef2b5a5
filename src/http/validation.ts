import type { z } from 'zod';
import { invalidField, TillError } from '../common/errors.ts';

/** The value at an issue's path in the input (zod 4 issues do not carry it). */
function valueAt(input: unknown, path: readonly PropertyKey[]): unknown {
  let value = input;
  for (const key of path) {
    if (value === null || typeof value !== 'object') return undefined;
    value = (value as Record<PropertyKey, unknown>)[key];
  }
  return value;
}

function refusal(issue: z.core.$ZodIssue, input: unknown): TillError {
  const field = issue.path.map(String).join('.') || 'body';
  switch (issue.code) {
    case 'unrecognized_keys':
      return new TillError('unknown_field', { field: [...issue.path.map(String), issue.keys[0] ?? ''].join('.') });
    case 'invalid_type':
      if (valueAt(input, issue.path) === undefined) return invalidField(field, 'is required');
      return invalidField(field, `must be ${issue.expected === 'object' ? 'a JSON object' : `a ${issue.expected}`}`);
    default:
      return invalidField(field, `is invalid: ${issue.message}`);
  }
}

/** Validates input against a zod schema; the first problem becomes a 400 naming its field. */
export function validate<S extends z.ZodType>(schema: S, input: unknown): z.output<S> {
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  throw refusal(result.error.issues[0]!, input);
}

/**
 * A list's query string: each parameter given once (a repeated one is a 400 naming it; `several`
 * names the ones that take several values, comma-separated, with their plural for the hint), then
 * validated as `validate` does.
 */
export function validateQuery<S extends z.ZodObject>(schema: S, query: unknown, several: Record<string, string> = {}): z.output<S> {
  const given = (query ?? {}) as Record<string, unknown>;
  const repeated = Object.keys(schema.shape).find((name) => Array.isArray(given[name]));
  if (repeated) throw invalidField(repeated, `must be given once${several[repeated] ? `; several ${several[repeated]} are comma-separated` : ''}`);
  return validate(schema, given);
}

/**
 * Where a request's input holds a NUL character (U+0000), as the field to name: a path or query
 * parameter, or a dotted path into the body, keys included. No field of ours takes one, and
 * PostgreSQL cannot store or compare one in text, so it is refused on every engine alike.
 * Walked without recursion: a body may nest deeper than the stack.
 */
export function nulCharacterField(input: { params?: unknown; query?: unknown; body?: unknown }): string | undefined {
  const pending: [unknown, string][] = [
    [input.params, ''],
    [input.query, ''],
    [input.body, 'body'],
  ];
  while (pending.length > 0) {
    const [value, path] = pending.pop() as [unknown, string];
    if (typeof value === 'string') {
      if (value.includes('\u0000')) return path;
    } else if (value !== null && typeof value === 'object') {
      for (const [key, child] of Object.entries(value)) {
        const field = path === '' || path === 'body' ? key : `${path}.${key}`;
        if (key.includes('\u0000')) return field.replaceAll('\u0000', '\\u0000');
        pending.push([child, field]);
      }
    }
  }
  return undefined;
}
