import { escapeHtml } from '../../http/html.ts';

/** A refusal of a form: the field it names (its input's name) and what is wrong, said for people. */
export type FieldProblem = { field: string; message: string };

export type InputOptions = {
  name: string;
  label: string;
  type?: 'text' | 'email' | 'url' | 'password';
  value?: string;
  hint?: string;
  autocomplete?: string;
  required?: boolean;
  /** Extra attributes, already safe (`spellcheck="false"` …). */
  attributes?: string;
};

/**
 * A labelled input. When the form's problem names it, the input is marked invalid, takes the focus,
 * and the problem is written under it and tied to it (`aria-describedby`), so a screen reader says
 * it with the field.
 */
export function labelledInput(options: InputOptions, problem: FieldProblem | undefined): string {
  const id = `field-${options.name.replaceAll('_', '-')}`;
  const invalid = problem?.field === options.name;
  const described = [options.hint ? `${id}-hint` : '', invalid ? `${id}-problem` : ''].filter(Boolean).join(' ');
  return `<p class="field"><label for="${id}">${escapeHtml(options.label)}</label>${options.hint ? `<span id="${id}-hint" class="note hint">${escapeHtml(options.hint)}</span>` : ''}
<input id="${id}" name="${options.name}" type="${options.type ?? 'text'}"${options.value !== undefined ? ` value="${escapeHtml(options.value)}"` : ''}${options.autocomplete ? ` autocomplete="${options.autocomplete}"` : ''}${options.required ? ' required' : ''}${described ? ` aria-describedby="${described}"` : ''}${invalid ? ' aria-invalid="true" autofocus' : ''}${options.attributes ? ` ${options.attributes}` : ''}>${invalid ? `<span id="${id}-problem" class="field-problem">${escapeHtml(`${options.label} ${problem.message}.`)}</span>` : ''}</p>`;
}

/** The hidden CSRF field every dashboard form carries. */
export const csrfInput = (token: string) => `<input type="hidden" name="csrf" value="${escapeHtml(token)}">`;

/** Epoch ms as `2026-11-24 16:31 UTC`. */
export const utcMinute = (ms: number) => `${new Date(ms).toISOString().slice(0, 16).replace('T', ' ')} UTC`;
