import { z } from 'zod';
import { documentedRoutes } from './routes.ts';

function jsonSchema(schema: z.ZodType, io: 'input' | 'output'): Record<string, unknown> {
  const { $schema: _ignored, ...rest } = z.toJSONSchema(schema, { io, unrepresentable: 'any', reused: 'inline' }) as Record<string, unknown>;
  return rest;
}

/** OpenAPI 3.1, generated from the same zod schemas that validate requests. */
export function buildOpenApi(baseUrl: string) {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of documentedRoutes()) {
    const parameters = [
      ...Object.entries(route.params?.shape ?? {}).map(([name, schema]) => ({ name, in: 'path', required: true, schema: jsonSchema(schema as z.ZodType, 'input') })),
      ...Object.entries(route.query?.shape ?? {}).map(([name, schema]) => ({ name, in: 'query', required: !(schema as z.ZodType).safeParse(undefined).success, schema: jsonSchema(schema as z.ZodType, 'input') })),
    ];
    const operation: Record<string, unknown> = {
      tags: [route.tag],
      summary: route.summary,
      ...(route.description ? { description: route.description } : {}),
      ...(route.security === 'apiKey' ? { security: [{ apiKey: [] }] } : {}),
      ...(parameters.length ? { parameters } : {}),
      ...(route.body ? { requestBody: { required: true, content: { 'application/json': { schema: jsonSchema(route.body, 'input') } } } } : {}),
      responses: Object.fromEntries(
        Object.entries(route.responses).map(([status, response]) => [
          status,
          { description: response.description, ...(response.schema ? { content: { 'application/json': { schema: jsonSchema(response.schema, 'output') } } } : {}) },
        ]),
      ),
    };
    (paths[route.url] ??= {})[route.method.toLowerCase()] = operation;
  }
  return {
    openapi: '3.1.0',
    info: { title: 'Till payment-session API', version: '2.0', description: 'Create and update payment sessions, pay them over x402, read receipts.' },
    servers: [{ url: baseUrl }],
    components: { securitySchemes: { apiKey: { type: 'apiKey', in: 'header', name: 'X-SC-ApiKey' } } },
    paths,
  };
}
