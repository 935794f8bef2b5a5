import type { OpenApiDocument } from '../../http/openapi.ts';
import { type Html, html, joinHtml } from '../kit/html.ts';
import { page } from '../kit/page.ts';

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
 * [links](https://…) — made into markup piece by piece; every piece of text is escaped by the tag,
 * so nothing in a description becomes markup by accident. Code spans are literal.
 */
const INLINE = /`([^`]+)`|\*\*([^*]+)\*\*|\*([^*\s][^*]*)\*|\[([^\]]+)\]\(((?:https?:\/\/|\/|#)[^)\s]*)\)/g;

export function renderInlineMarkdown(text: string): Html {
  const parts: Html[] = [];
  let at = 0;
  for (const match of text.matchAll(INLINE)) {
    const [whole, code, strong, emphasis, linkText, href] = match;
    parts.push(html`${text.slice(at, match.index)}`);
    if (code !== undefined) parts.push(html`<code>${code}</code>`);
    else if (strong !== undefined) parts.push(html`<strong>${renderInlineMarkdown(strong)}</strong>`);
    else if (emphasis !== undefined) parts.push(html`<em>${renderInlineMarkdown(emphasis)}</em>`);
    else parts.push(html`<a href="${href}">${renderInlineMarkdown(linkText ?? '')}</a>`);
    at = match.index + whole.length;
  }
  parts.push(html`${text.slice(at)}`);
  return joinHtml(parts);
}

const componentName = (ref: string) => ref.slice(ref.lastIndexOf('/') + 1);
const componentLink = (ref: string) => html`<a href="#schema-${componentName(ref)}"><code>${componentName(ref)}</code></a>`;

/** A one-line type: `string`, `number | null`, `"STATIC" | "TRANSIENT"`, `array of SessionPayment`. */
function typeOf(schema: JsonSchema): Html {
  if (schema.$ref) return componentLink(schema.$ref);
  if (schema.const !== undefined) return html`<code>${JSON.stringify(schema.const)}</code>`;
  if (schema.enum)
    return joinHtml(
      schema.enum.map((value) => html`<code>${JSON.stringify(value)}</code>`),
      html` | `,
    );
  const variants = schema.anyOf ?? schema.oneOf;
  if (variants) return joinHtml(variants.map(typeOf), html` | `);
  const types = Array.isArray(schema.type) ? schema.type : schema.type ? [schema.type] : ['any'];
  return joinHtml(
    types.map((type) => (type === 'array' ? html`array of ${schema.items ? typeOf(schema.items) : 'any'}` : html`${type}`)),
    html` | `,
  );
}

function constraints(schema: JsonSchema): Html | '' {
  const notes = [
    schema.format && `format ${schema.format}`,
    schema.minLength !== undefined && `at least ${schema.minLength} characters`,
    schema.maxLength !== undefined && `at most ${schema.maxLength} characters`,
  ].filter(Boolean);
  return notes.length ? html` <small>(${notes.join(', ')})</small>` : '';
}

/** An object schema as a table of its fields; anything else as its type. */
function fieldsTable(schema: JsonSchema): Html {
  if (!schema.properties) return html`<p>${typeOf(schema)}</p>`;
  const required = new Set(schema.required ?? []);
  const rows = Object.entries(schema.properties).map(
    ([name, field]) =>
      html`<tr><td><code>${name}</code></td><td>${typeOf(field)}${constraints(field)}</td><td>${required.has(name) ? 'yes' : 'no'}</td><td>${field.description ? renderInlineMarkdown(field.description) : ''}</td></tr>`,
  );
  const strict = schema.additionalProperties === false ? html`<p class="note">Other fields are refused.</p>` : '';
  return html`<table><thead><tr><th>Field</th><th>Type</th><th>Required</th><th>Description</th></tr></thead><tbody>${rows}</tbody></table>${strict}`;
}

function bodyOf(content: Record<string, { schema: JsonSchema }> | undefined): Html | '' {
  const schema = content?.['application/json']?.schema;
  return schema ? typeOf(schema) : '';
}

function renderOperation(path: string, method: string, operation: Operation, schemas: Record<string, JsonSchema>): Html {
  const id = `${method}-${path}`.replace(/[^\w-]+/g, '-');
  const parameters = operation.parameters?.length
    ? html`<h4>Parameters</h4><table><thead><tr><th>Name</th><th>In</th><th>Type</th><th>Required</th></tr></thead><tbody>${operation.parameters.map(
        (p) =>
          html`<tr><td><code>${p.name}</code></td><td>${p.in}</td><td>${typeOf(p.schema)}${p.schema.description ? html` — ${renderInlineMarkdown(p.schema.description)}` : ''}</td><td>${p.required ? 'yes' : 'no'}</td></tr>`,
      )}</tbody></table>`
    : '';
  const requestSchema = operation.requestBody?.content['application/json']?.schema;
  // The request body's fields are what a caller reads most: shown in place, not only linked.
  const requestFields = requestSchema?.$ref ? schemas[componentName(requestSchema.$ref)] : requestSchema;
  const request = requestSchema
    ? html`<h4>Request body <small>application/json${requestSchema.$ref ? html` — ${componentLink(requestSchema.$ref)}` : ''}</small></h4>${requestFields ? fieldsTable(requestFields) : ''}`
    : '';
  const responses = Object.entries(operation.responses).map(
    ([status, response]) =>
      html`<tr><td><code>${status}</code></td><td>${renderInlineMarkdown(response.description)}</td><td>${bodyOf(response.content)}</td></tr>`,
  );
  return html`<section class="operation" id="${id}">
<h3><span class="method method-${method}">${method.toUpperCase()}</span> <code>${path}</code></h3>
<p><strong>${operation.summary}</strong>${operation.security?.length ? html` — needs <code>X-SC-ApiKey</code>` : ' — public'}</p>
${operation.description ? html`<p>${renderInlineMarkdown(operation.description)}</p>` : ''}${parameters}${request}
<h4>Responses</h4><table><thead><tr><th>Status</th><th>When</th><th>Body</th></tr></thead><tbody>${responses}</tbody></table>
</section>`;
}

/** A readable API reference rendered on the server from the OpenAPI document. */
export function renderApiReference(openapi: OpenApiDocument): Html {
  const components = openapi.components.schemas as Record<string, JsonSchema>;
  const operations = Object.entries(openapi.paths).flatMap(([path, methods]) =>
    Object.entries(methods).map(([method, operation]) => ({ path, method, operation: operation as Operation })),
  );
  const tags = [...new Set(operations.map(({ operation }) => (operation as { tags?: string[] }).tags?.[0] ?? 'Other'))];
  const byTag = tags.map((tag) => {
    const inTag = operations.filter(({ operation }) => ((operation as { tags?: string[] }).tags?.[0] ?? 'Other') === tag);
    return html`<h2 id="tag-${tag.replace(/\W+/g, '-')}">${tag}</h2>${joinHtml(
      inTag.map(({ path, method, operation }) => renderOperation(path, method, operation, components)),
      html`\n`,
    )}`;
  });
  const schemas = Object.entries(components).map(
    ([name, schema]) =>
      html`<section class="schema" id="schema-${name}"><h3><code>${name}</code></h3>${schema.description ? html`<p>${renderInlineMarkdown(schema.description)}</p>` : ''}${fieldsTable(schema)}</section>`,
  );
  const contents = tags.map((tag) => html`<li><a href="#tag-${tag.replace(/\W+/g, '-')}">${tag}</a></li>`);
  const errorCodes = openapi['x-error-codes'].map(
    ({ code, status, meaning }) => html`<tr><td><code>${status}</code></td><td><code>${code}</code></td><td>${renderInlineMarkdown(meaning)}</td></tr>`,
  );
  return page(
    'Till API reference',
    html`<header><h1>Till API reference <small>v${openapi.info.version}</small></h1>
<p>Machine-readable: <a href="/openapi.json">/openapi.json</a> (OpenAPI 3.1). Base URL: <code>${openapi.servers[0]?.url ?? ''}</code>. Every error has the shape <code>{"error":{"code","message","field"}}</code>.</p>
<nav aria-label="Contents"><ul>${contents}<li><a href="#error-codes">Error codes</a></li><li><a href="#schemas">Schemas</a></li></ul></nav></header>
<main>${joinHtml(byTag, html`\n`)}<h2 id="error-codes">Error codes</h2><table><thead><tr><th>Status</th><th><code>code</code></th><th>When</th></tr></thead><tbody>${errorCodes}</tbody></table>
<h2 id="schemas">Schemas</h2>${joinHtml(schemas, html`\n`)}</main>`,
  );
}
