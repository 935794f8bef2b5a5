import { isDeepStrictEqual } from 'node:util';
import { z } from 'zod';
import { ERROR_CODES, ErrorResponse } from './errors.ts';
import type { RouteDoc, WebhookDoc } from './routes.ts';

type JsonSchema = Record<string, unknown>;

const DEFS_PREFIX = '#/$defs/';
const COMPONENTS_PREFIX = '#/components/schemas/';

/**
 * Schemas with an `id` (`.meta({ id })`) become named components, referenced from wherever they
 * are used; zod emits them as `$defs` of each converted schema, which are moved here.
 */
class Components {
  readonly schemas: Record<string, JsonSchema> = {};

  /** The JSON Schema of a zod schema, its named parts moved to components and referenced. */
  add(schema: z.ZodType, io: 'input' | 'output'): JsonSchema {
    const { $schema: _dialect, $defs, ...root } = z.toJSONSchema(schema, { io, unrepresentable: 'any' }) as JsonSchema & { $defs?: Record<string, JsonSchema> };
    for (const [id, definition] of Object.entries($defs ?? {})) this.put(id, retarget(definition) as JsonSchema);
    return retarget(root) as JsonSchema;
  }

  private put(id: string, definition: JsonSchema): void {
    const existing = this.schemas[id];
    // One name, one shape: a schema whose input and output differ needs two ids.
    if (existing && !isDeepStrictEqual(existing, definition)) throw new Error(`OpenAPI component ${id} is defined twice with different shapes`);
    this.schemas[id] = definition;
  }
}

/** Rewrites zod's local `#/$defs/X` references to the document's `#/components/schemas/X`. */
function retarget(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(retarget);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.entries(value).map(([key, inner]) => [
      key,
      key === '$ref' && typeof inner === 'string' && inner.startsWith(DEFS_PREFIX) ? COMPONENTS_PREFIX + inner.slice(DEFS_PREFIX.length) : retarget(inner),
    ]),
  );
}

/**
 * What the document describes: the JSON API, and only it. Sessions (E1, E2, the read) and webhook
 * deliveries under `/api/`, paying over x402 (E3, both paths), receipts (E4), the token endpoint and
 * revocation, and the discovery documents and JWKS (E6). Pages and form posts (the hosted checkout
 * page, sign-in, consent, the dashboard) are documented routes too, but not API: a route is listed
 * only when its path is here, so a new page never slips in.
 */
export const API_PATHS: readonly RegExp[] = [/^\/api\//, /^\/x402\//, /^\/checkout\/v2\//, /^\/oauth\/(?:token|revoke)$/, /^\/\.well-known\//];

export const isApiRoute = (route: Pick<RouteDoc, 'url'>) => API_PATHS.some((path) => path.test(route.url));

/**
 * How a merchant's server authenticates to the payment API: its API key, or a bearer token from
 * client credentials (`POST /oauth/token`); either one, so operations list both as alternatives.
 */
const SECURITY_SCHEMES = {
  apiKey: { type: 'apiKey', in: 'header', name: 'X-SC-ApiKey', description: "The merchant's API key (sk_test_… or sk_live_…); its prefix names the mode." },
  clientCredentials: {
    type: 'http',
    scheme: 'bearer',
    bearerFormat: 'JWT',
    description:
      'An access token from `POST /oauth/token` with `grant_type=client_credentials` and `audience` `{base_url}/checkout` (24 h), sent as `Authorization: Bearer …`.',
  },
} as const;

const merchantSecurity = (scope: string | undefined) => {
  const scopes = scope ? [scope] : [];
  return [{ apiKey: scopes }, { clientCredentials: scopes }];
};

/**
 * Every route refuses a NUL character in any input before its handler runs (see nulCharacterField),
 * so an operation that declares no 4xx of its own still has this one.
 */
const NUL_REFUSAL = { description: 'A NUL character (U+0000) in a parameter (`invalid_field`)' };

/** OpenAPI 3.1 of the API routes among these, generated from the same zod schemas that validate requests. */
export function buildOpenApi(baseUrl: string, routes: readonly RouteDoc[], webhooks: readonly WebhookDoc[] = []) {
  const components = new Components();
  const error = components.add(ErrorResponse, 'output');
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of routes.filter(isApiRoute)) {
    const parameters = [
      ...Object.entries(route.params?.shape ?? {}).map(([name, schema]) => ({
        name,
        in: 'path',
        required: true,
        schema: components.add(schema as z.ZodType, 'input'),
      })),
      ...Object.entries(route.query?.shape ?? {}).map(([name, schema]) => ({
        name,
        in: 'query',
        required: !(schema as z.ZodType).safeParse(undefined).success,
        schema: components.add(schema as z.ZodType, 'input'),
      })),
    ];
    const declared = Object.keys(route.responses).some((status) => status.startsWith('4'));
    const responses = Object.entries(route.responses).map(([status, response]) => [
      status,
      {
        description: response.description,
        ...(response.schema ? { content: { 'application/json': { schema: components.add(response.schema, 'output'), ...exampleOf(response.example) } } } : {}),
      },
    ]);
    const operation: Record<string, unknown> = {
      ...(route.operationId ? { operationId: route.operationId } : {}),
      tags: [route.tag],
      summary: route.summary,
      ...(route.description ? { description: route.description } : {}),
      // A public operation says so (`security: []`), as the document declares no default; a merchant's
      // lists the scope a restricted key or narrowed token needs (OpenAPI 3.1 lets any scheme list roles).
      security: route.security === 'apiKey' ? merchantSecurity(route.scope) : [],
      ...(parameters.length ? { parameters } : {}),
      ...(route.body
        ? { requestBody: { required: true, content: { 'application/json': { schema: components.add(route.body, 'input'), ...exampleOf(route.bodyExample) } } } }
        : {}),
      responses: Object.fromEntries(declared ? responses : [...responses, ['400', { ...NUL_REFUSAL, content: { 'application/json': { schema: error } } }]]),
    };
    paths[route.url] = { ...paths[route.url], [route.method.toLowerCase()]: operation };
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Till payment-session API',
      version: '2.0',
      description: 'Create and update payment sessions, pay them over x402, read receipts.',
      license: { name: 'Apache-2.0', identifier: 'Apache-2.0' },
    },
    servers: [{ url: baseUrl }],
    components: { schemas: components.schemas, securitySchemes: SECURITY_SCHEMES },
    paths,
    webhooks: Object.fromEntries(
      webhooks.map((webhook) => [
        webhook.name,
        {
          post: {
            operationId: webhook.operationId,
            summary: webhook.summary,
            description: webhook.description,
            security: [],
            requestBody: { required: true, content: { 'application/json': { schema: components.add(webhook.schema, 'output') } } },
            responses: {
              '200': { description: 'Received: any 2xx ends the delivery' },
              '400': { description: 'Refused (a bad signature, say): retried with backoff, as any answer but 2xx' },
            },
          },
        },
      ]),
    ),
    /** The closed catalogue of `error.code` values, each with its one HTTP status. */
    'x-error-codes': ERROR_CODES,
  };
}

const exampleOf = (example: unknown) => (example === undefined ? {} : { example });

export type OpenApiDocument = ReturnType<typeof buildOpenApi>;
