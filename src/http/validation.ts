import { z } from 'zod';
import { ApiError } from './errors.ts';

/** The value at an issue's path in the input (zod 4 issues do not carry it). */
function valueAt(input: unknown, path: readonly PropertyKey[]): unknown {
  let value = input;
  for (const key of path) {
    if (value === null || typeof value !== 'object') return undefined;
    value = (value as Record<PropertyKey, unknown>)[key];
  }
  return value;
}

function describe(issue: z.core.$ZodIssue, input: unknown): { field: string; message: string } {
  const field = issue.path.map(String).join('.') || 'body';
  switch (issue.code) {
    case 'unrecognized_keys': {
      const key = issue.keys[0] ?? '';
      const name = [...issue.path.map(String), key].join('.');
      return { field: name, message: `Unknown field "${name}" is not accepted` };
    }
    case 'invalid_type':
      if (valueAt(input, issue.path) === undefined) return { field, message: `${field} is required` };
      return { field, message: `${field} must be ${issue.expected === 'object' ? 'a JSON object' : `a ${issue.expected}`}` };
    default:
      return { field, message: `${field}: ${issue.message}` };
  }
}

/** Validates input against a zod schema; the first problem becomes a 400 naming its field. */
export function validate<S extends z.ZodType>(schema: S, input: unknown): z.output<S> {
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  const issue = result.error.issues[0]!;
  const { field, message } = describe(issue, input);
  throw new ApiError(400, issue.code === 'unrecognized_keys' ? 'unknown_field' : 'invalid_field', message, { field });
}
