import type { FastifyInstance } from 'fastify';
import packageJson from '../../../package.json' with { type: 'json' };
import type { AppContext } from '../../context.ts';
import { type Html, html } from '../kit/html.ts';
import { page, prefersHtml } from '../kit/page.ts';

type SandboxStatus = { answering: true; blockNumber: string; usdcAddress: string } | { answering: false };

/** Whether the sandbox chain answers now; asked with a short timeout so the page never hangs on it. */
async function sandboxStatus(sandboxUrl: string): Promise<SandboxStatus> {
  try {
    const response = await fetch(`${sandboxUrl}/healthz`, { signal: AbortSignal.timeout(1_000) });
    if (!response.ok) return { answering: false };
    const health = (await response.json()) as { blockNumber?: string; usdcAddress?: string };
    return { answering: true, blockNumber: String(health.blockNumber ?? '?'), usdcAddress: String(health.usdcAddress ?? '') };
  } catch {
    return { answering: false };
  }
}

function sandboxSection(status: SandboxStatus, usdcAddress: string | undefined): Html {
  const chain = status.answering
    ? html`answering, block ${status.blockNumber}`
    : html`<strong>not answering</strong>: start it with <code>npm start</code> or <code>till sandbox</code>`;
  return html`<h2>Sandbox</h2>
<table><tbody>
<tr><th>Chain</th><td>${chain}</td></tr>
<tr><th>Token</th><td><code>${usdcAddress ?? ''}</code> (sandbox USDC, 6 decimals)</td></tr>
<tr><th>Faucet</th><td><code>POST /sandbox/faucet {"address":"0x…","usdc":"100"}</code></td></tr>
<tr><th>JSON-RPC</th><td><code>POST /sandbox/rpc</code> (chain id 8453)</td></tr>
</tbody></table>`;
}

function renderLanding(view: { mode: string; version: string; baseUrl: string; sandbox: SandboxStatus | undefined; usdcAddress: string | undefined }): Html {
  const banner = view.sandbox
    ? html`<p class="sandbox-banner" role="note"><strong>Sandbox:</strong> test money only. Payments here move a USDC-like token that is worth nothing, on a local chain.</p>`
    : '';
  return page(
    'Till',
    html`${banner}<h1>Till <small>${view.version}</small></h1>
<p>Self-hostable payment sessions in USDC, payable by buyers and AI agents over x402. This service runs in <strong>${view.mode}</strong> mode at <code>${view.baseUrl}</code>.</p>
<h2>Start here</h2>
<ul>
<li><a href="/docs">API reference</a> — every endpoint, its fields and its answers</li>
<li><a href="/openapi.json">OpenAPI 3.1 document</a> — for client generators</li>
<li><a href="/healthz">Health</a> and <a href="/readyz">readiness</a></li>
<li><a href="/sign-in">Merchant sign-in</a></li>
</ul>
${view.sandbox ? sandboxSection(view.sandbox, view.usdcAddress) : ''}`,
  );
}

/** `GET /`: a small page for people who open the service's address, and a JSON index for programs. */
export function registerLanding(app: FastifyInstance, context: AppContext): void {
  const { config } = context;
  app.get('/', async (request, reply) => {
    const sandbox = config.mode === 'sandbox' && config.sandboxUrl ? await sandboxStatus(config.sandboxUrl) : undefined;
    reply.header('vary', 'Accept').header('cache-control', 'no-store');
    if (prefersHtml(request.headers.accept)) {
      return reply.type('text/html; charset=utf-8').send(
        String(
          renderLanding({
            mode: config.mode,
            version: packageJson.version,
            baseUrl: config.baseUrl,
            sandbox,
            usdcAddress: config.chains.sandbox?.usdcAddress,
          }),
        ),
      );
    }
    return {
      service: 'till',
      version: packageJson.version,
      mode: config.mode,
      links: { apiReference: '/docs', openapi: '/openapi.json', health: '/healthz', readiness: '/readyz' },
      ...(config.mode === 'sandbox'
        ? {
            sandbox: {
              ...(sandbox ?? { answering: false }),
              faucet: '/sandbox/faucet',
              rpc: '/sandbox/rpc',
              usdcAddress: config.chains.sandbox?.usdcAddress ?? null,
            },
          }
        : {}),
    };
  });
}
