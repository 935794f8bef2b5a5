import { escapeHtml, page } from './html.ts';
import type { OpenApiDocument } from './openapi.ts';

type JsonSchema = {
  $ref?: string;
  type?: string | string[];
  enum?: unknown[];
  const?: unknown;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  items?: JsonSchema;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  additionalProperties?: boolean | JsonSchema;
  description?: string;
  format?: string;
  minLength?: number;
  maxLength?: number;
  pattern?: string;
};

type Operation = {
  summary: string;
  description?: string;
  security?: unknown[];
  parameters?: { name: string; in: string; required: boolean; schema: JsonSchema }[];
  requestBody?: { content: Record<string, { schema: JsonSchema }> };
  responses: Record<string, { description: string; content?: Record<string, { schema: JsonSchema }> }>;
};

/**
 * The small part of Markdown that descriptions use — `code`, **strong**, *emphasis* and
 * [links](https://…) — rendered from escaped text, so nothing in a description becomes markup
 * by accident.
 */
/** Stands in for a code span while the rest is escaped and marked up (a private-use character no description contains). */
const CODE_MARK = '\uE000';
const CODE_SPAN = new RegExp(`${CODE_MARK}(\\d+)${CODE_MARK}`, 'g');

export function renderInlineMarkdown(text: string): string {
  const codeSpans: string[] = [];
  const withoutCode = text.replace(/`([^`]+)`/g, (_match, code: string) => `${CODE_MARK}${codeSpans.push(code) - 1}${CODE_MARK}`);
  return escapeHtml(withoutCode)
    .replace(/\*\*([^*]+)\*\*/g, '<strong>$1</strong>')
    .replace(/\*([^*\s][^*]*)\*/g, '<em>$1</em>')
    .replace(/\[([^\]]+)\]\(((?:https?:\/\/|\/|#)[^)\s]*)\)/g, '<a href="$2">$1</a>')
    .replace(CODE_SPAN, (_match, index: string) => `<code>${escapeHtml(codeSpans[Number(index)])}</code>`);
}

const componentName = (ref: string) => ref.slice(ref.lastIndexOf('/') + 1);
const componentLink = (ref: string) => `<a href="#schema-${escapeHtml(componentName(ref))}"><code>${escapeHtml(componentName(ref))}</code></a>`;

/** A one-line type: `string`, `number | null`, `"STATIC" | "TRANSIENT"`, `array of SessionPayment`. */
function typeOf(schema: JsonSchema): string {
  if (schema.$ref) return componentLink(schema.$ref);
  if (schema.const !== undefined) return `<code>${escapeHtml(JSON.stringify(schema.const))}</code>`;
  if (schema.enum) return schema.enum.map((value) => `<code>${escapeHtml(JSON.stringify(value))}</code>`).join(' | ');
  const variants = schema.anyOf ?? schema.oneOf;
  if (variants) return variants.map(typeOf).join(' | ');
  const types = Array.isArray(schema.type) ? schema.type : schema.type ? [schema.type] : ['any'];
  return types.map((type) => (type === 'array' ? `array of ${schema.items ? typeOf(schema.items) : 'any'}` : escapeHtml(type))).join(' | ');
}

function constraints(schema: JsonSchema): string {
  const notes = [
    schema.format && `format ${schema.format}`,
    schema.minLength !== undefined && `at least ${schema.minLength} characters`,
    schema.maxLength !== undefined && `at most ${schema.maxLength} characters`,
  ].filter(Boolean);
  return notes.length ? ` <small>(${escapeHtml(notes.join(', '))})</small>` : '';
}

/** An object schema as a table of its fields; anything else as its type. */
function fieldsTable(schema: JsonSchema): string {
  if (!schema.properties) return `<p>${typeOf(schema)}</p>`;
  const required = new Set(schema.required ?? []);
  const rows = Object.entries(schema.properties).map(
    ([name, field]) =>
      `<tr><td><code>${escapeHtml(name)}</code></td><td>${typeOf(field)}${constraints(field)}</td><td>${required.has(name) ? 'yes' : 'no'}</td><td>${field.description ? renderInlineMarkdown(field.description) : ''}</td></tr>`,
  );
  const strict = schema.additionalProperties === false ? '<p class="note">Other fields are refused.</p>' : '';
  return `<table><thead><tr><th>Field</th><th>Type</th><th>Required</th><th>Description</th></tr></thead><tbody>${rows.join('')}</tbody></table>${strict}`;
}

function bodyOf(content: Record<string, { schema: JsonSchema }> | undefined): string {
  const schema = content?.['application/json']?.schema;
  return schema ? typeOf(schema) : '';
}

function renderOperation(path: string, method: string, operation: Operation, schemas: Record<string, JsonSchema>): string {
  const id = `${method}-${path}`.replace(/[^\w-]+/g, '-');
  const parameters = operation.parameters?.length
    ? `<h4>Parameters</h4><table><thead><tr><th>Name</th><th>In</th><th>Type</th><th>Required</th></tr></thead><tbody>${operation.parameters
        .map(
          (p) =>
            `<tr><td><code>${escapeHtml(p.name)}</code></td><td>${escapeHtml(p.in)}</td><td>${typeOf(p.schema)}${p.schema.description ? ` — ${renderInlineMarkdown(p.schema.description)}` : ''}</td><td>${p.required ? 'yes' : 'no'}</td></tr>`,
        )
        .join('')}</tbody></table>`
    : '';
  const requestSchema = operation.requestBody?.content['application/json']?.schema;
  // The request body's fields are what a caller reads most: shown in place, not only linked.
  const requestFields = requestSchema?.$ref ? schemas[componentName(requestSchema.$ref)] : requestSchema;
  const request = requestSchema
    ? `<h4>Request body <small>application/json${requestSchema.$ref ? ` — ${componentLink(requestSchema.$ref)}` : ''}</small></h4>${requestFields ? fieldsTable(requestFields) : ''}`
    : '';
  const responses = Object.entries(operation.responses)
    .map(
      ([status, response]) =>
        `<tr><td><code>${escapeHtml(status)}</code></td><td>${renderInlineMarkdown(response.description)}</td><td>${bodyOf(response.content)}</td></tr>`,
    )
    .join('');
  return `<section class="operation" id="${escapeHtml(id)}">
<h3><span class="method method-${escapeHtml(method)}">${escapeHtml(method.toUpperCase())}</span> <code>${escapeHtml(path)}</code></h3>
<p><strong>${escapeHtml(operation.summary)}</strong>${operation.security?.length ? ' — needs <code>X-SC-ApiKey</code>' : ' — public'}</p>
${operation.description ? `<p>${renderInlineMarkdown(operation.description)}</p>` : ''}${parameters}${request}
<h4>Responses</h4><table><thead><tr><th>Status</th><th>When</th><th>Body</th></tr></thead><tbody>${responses}</tbody></table>
</section>`;
}

/** A readable API reference rendered on the server from the OpenAPI document. */
export function renderApiReference(openapi: OpenApiDocument): string {
  const components = openapi.components.schemas as Record<string, JsonSchema>;
  const operations = Object.entries(openapi.paths).flatMap(([path, methods]) =>
    Object.entries(methods).map(([method, operation]) => ({ path, method, operation: operation as Operation })),
  );
  const tags = [...new Set(operations.map(({ operation }) => (operation as { tags?: string[] }).tags?.[0] ?? 'Other'))];
  const byTag = tags.map((tag) => {
    const inTag = operations.filter(({ operation }) => ((operation as { tags?: string[] }).tags?.[0] ?? 'Other') === tag);
    return `<h2 id="tag-${escapeHtml(tag.replace(/\W+/g, '-'))}">${escapeHtml(tag)}</h2>${inTag.map(({ path, method, operation }) => renderOperation(path, method, operation, components)).join('\n')}`;
  });
  const schemas = Object.entries(components)
    .map(
      ([name, schema]) =>
        `<section class="schema" id="schema-${escapeHtml(name)}"><h3><code>${escapeHtml(name)}</code></h3>${schema.description ? `<p>${renderInlineMarkdown(schema.description)}</p>` : ''}${fieldsTable(schema)}</section>`,
    )
    .join('\n');
  const contents = tags.map((tag) => `<li><a href="#tag-${escapeHtml(tag.replace(/\W+/g, '-'))}">${escapeHtml(tag)}</a></li>`).join('');
  const errorCodes = openapi['x-error-codes']
    .map(
      ({ code, status, meaning }) =>
        `<tr><td><code>${status}</code></td><td><code>${escapeHtml(code)}</code></td><td>${renderInlineMarkdown(meaning)}</td></tr>`,
    )
    .join('');
  return page(
    'Till API reference',
    `<header><h1>Till API reference <small>v${escapeHtml(openapi.info.version)}</small></h1>
<p>Machine-readable: <a href="/openapi.json">/openapi.json</a> (OpenAPI 3.1). Base URL: <code>${escapeHtml(openapi.servers[0]?.url ?? '')}</code>. Every error has the shape <code>{"error":{"code","message","field"}}</code>.</p>
<nav aria-label="Contents"><ul>${contents}<li><a href="#error-codes">Error codes</a></li><li><a href="#schemas">Schemas</a></li></ul></nav></header>
<main>${byTag.join('\n')}<h2 id="error-codes">Error codes</h2><table><thead><tr><th>Status</th><th><code>code</code></th><th>When</th></tr></thead><tbody>${errorCodes}</tbody></table>
<h2 id="schemas">Schemas</h2>${schemas}</main>`,
  );
}
