import { escapeHtml, page } from './html.ts';
import type { buildOpenApi } from './openapi.ts';

/** A readable API reference rendered on the server from the OpenAPI document. */
export function renderApiReference(openapi: ReturnType<typeof buildOpenApi>): string {
  const sections = Object.entries(openapi.paths).flatMap(([path, operations]) =>
    Object.entries(operations).map(([method, raw]) => {
      const operation = raw as { summary: string; description?: string; requestBody?: { content: { 'application/json': { schema: unknown } } }; responses: Record<string, { description: string }>; security?: unknown };
      const body = operation.requestBody ? `<h4>Request body</h4><pre>${escapeHtml(JSON.stringify(operation.requestBody.content['application/json'].schema, null, 2))}</pre>` : '';
      const responses = Object.entries(operation.responses).map(([status, r]) => `<tr><td><code>${escapeHtml(status)}</code></td><td>${escapeHtml(r.description)}</td></tr>`).join('');
      return `<h2><span class="method">${escapeHtml(method)}</span> <code>${escapeHtml(path)}</code></h2>
<p><strong>${escapeHtml(operation.summary)}</strong>${operation.security ? ' — requires <code>X-SC-ApiKey</code>' : ''}</p>
${operation.description ? `<p>${escapeHtml(operation.description)}</p>` : ''}${body}<h4>Responses</h4><table>${responses}</table>`;
    }),
  );
  return page('Till API reference', `<h1>Till API reference <small>v${escapeHtml(openapi.info.version)}</small></h1>
<p>Machine-readable: <a href="/openapi.json">/openapi.json</a> (OpenAPI 3.1). Errors always have the shape <code>{"error":{"code","message","field"}}</code>.</p>${sections.join('\n')}`);
}
