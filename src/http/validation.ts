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
