import { type Html, html } from '../kit/html.ts';

/** A refusal of a form: the field it names (its input's name) and what is wrong, said for people. */
export type FieldProblem = { field: string; message: string };

export type InputOptions = {
  name: string;
  label: string;
  type?: 'text' | 'email' | 'url' | 'password' | 'file';
  value?: string;
  hint?: string;
  autocomplete?: string;
  required?: boolean;
  /** Extra attributes (`spellcheck="false"` …). */
  attributes?: Html;
};

/**
 * A labelled input. When the form's problem names it, the input is marked invalid, takes the focus,
 * and the problem is written under it and tied to it (`aria-describedby`), so a screen reader says
 * it with the field.
 */
export function labelledInput(options: InputOptions, problem: FieldProblem | undefined): Html {
  const id = `field-${options.name.replaceAll('_', '-')}`;
  const invalid = problem?.field === options.name;
  const described = [options.hint ? `${id}-hint` : '', invalid ? `${id}-problem` : ''].filter(Boolean).join(' ');
  return html`<p class="field"><label for="${id}">${options.label}</label>${options.hint ? html`<span id="${id}-hint" class="note hint">${options.hint}</span>` : ''}
<input id="${id}" name="${options.name}" type="${options.type ?? 'text'}"${options.value !== undefined ? html` value="${options.value}"` : ''}${options.autocomplete ? html` autocomplete="${options.autocomplete}"` : ''}${options.required ? html` required` : ''}${described ? html` aria-describedby="${described}"` : ''}${invalid ? html` aria-invalid="true" autofocus` : ''}${options.attributes ? html` ${options.attributes}` : ''}>${invalid ? html`<span id="${id}-problem" class="field-problem">${`${options.label} ${problem.message}.`}</span>` : ''}</p>`;
}

/** The hidden CSRF field every dashboard form carries. */
export const csrfInput = (token: string): Html => html`<input type="hidden" name="csrf" value="${token}">`;

/** Epoch ms as `2026-11-24 16:31 UTC`. */
export const utcMinute = (ms: number) => `${new Date(ms).toISOString().slice(0, 16).replace('T', ' ')} UTC`;
