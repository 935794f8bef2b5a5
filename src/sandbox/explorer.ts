import { createHash } from 'node:crypto';
import {
  type Address,
  decodeFunctionData,
  formatUnits,
  getAddress,
  type Hex,
  isAddressEqual,
  parseEventLogs,
  type Transaction,
  type TransactionReceipt,
} from 'viem';
import type { SandboxChain } from './chain.ts';
import { SANDBOX_CHAIN_ID, SANDBOX_USDC_DECIMALS } from './constants.ts';
import { sandboxUsdcAbi } from './contracts/artifacts.ts';

const STYLE = `body{font:15px/1.5 system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#1b1f24}
.banner{background:#fff4d6;border:1px solid #e6c15a;padding:.5rem .75rem;border-radius:6px}
table{border-collapse:collapse;width:100%;margin:1rem 0}th,td{text-align:left;padding:.35rem .5rem;border-bottom:1px solid #e3e6ea;vertical-align:top}
th{width:12rem;color:#57606a;font-weight:600}code{font:13px ui-monospace,monospace;word-break:break-all}
.ok{color:#1a7f37}.bad{color:#cf222e}`;

/** Only the page's own inline stylesheet is allowed; no script, no external resource. */
export const EXPLORER_CSP = [
  "default-src 'none'",
  `style-src 'sha256-${createHash('sha256').update(STYLE).digest('base64')}'`,
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

export const TX_HASH_PATTERN = /^0x[0-9a-fA-F]{64}$/;

const HTML_ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

export function escapeHtml(value: unknown): string {
  return String(value).replace(/[&<>"']/g, (c) => HTML_ESCAPES[c] ?? c);
}

const code = (value: unknown) => `<code>${escapeHtml(value)}</code>`;
const usdc = (value: bigint) => `${escapeHtml(formatUnits(value, SANDBOX_USDC_DECIMALS))} USDC`;
const isTokenAt = (token: Address) => (address: string | null | undefined) => !!address && isAddressEqual(address as Hex, token);

function page(title: string, body: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>${escapeHtml(title)}</title><style>${STYLE}</style></head>
<body><p class="banner">Till sandbox chain (chain id ${SANDBOX_CHAIN_ID}): test money only, this transaction is not on Base.</p>
${body}</body></html>`;
}

function rows(entries: [string, string][]): string {
  return `<table>${entries.map(([label, html]) => `<tr><th>${escapeHtml(label)}</th><td>${html}</td></tr>`).join('')}</table>`;
}

function describeCall(tx: Transaction, isToken: (address: string | null | undefined) => boolean): string {
  if (!isToken(tx.to)) return tx.input === '0x' ? 'ETH transfer' : 'contract call';
  try {
    return `USDC.${decodeFunctionData({ abi: sandboxUsdcAbi, data: tx.input }).functionName}`;
  } catch {
    return 'USDC (unknown function)';
  }
}

function describeEvents(receipt: TransactionReceipt, isToken: (address: string | null | undefined) => boolean): { transfers: string; authorizations: string } {
  const events = parseEventLogs({ abi: sandboxUsdcAbi, logs: receipt.logs.filter((log) => isToken(log.address)) });
  const transfers = events.flatMap((e) =>
    e.eventName === 'Transfer' ? [`${code(e.args.from)} → ${code(e.args.to)}: <strong>${usdc(e.args.value)}</strong>`] : [],
  );
  const authorizations = events.flatMap((e) =>
    e.eventName === 'AuthorizationUsed' || e.eventName === 'AuthorizationCanceled'
      ? [`${escapeHtml(e.eventName)} by ${code(e.args.authorizer)}, nonce ${code(e.args.nonce)}`]
      : [],
  );
  return {
    transfers: transfers.join('<br>') || 'none',
    authorizations: authorizations.join('<br>') || 'none',
  };
}

/** A readable page for one sandbox transaction; every value shown is HTML-escaped. */
export async function renderTransactionPage(chain: SandboxChain, hash: Hex): Promise<{ status: number; html: string }> {
  const client = chain.publicClient;
  const isToken = isTokenAt(chain.usdcAddress);
  const tx = await client.getTransaction({ hash }).catch(() => null);
  if (!tx) {
    return { status: 404, html: page('Transaction not found', `<h1>Transaction not found</h1><p>${code(hash)}</p>`) };
  }
  const receipt = await client.getTransactionReceipt({ hash }).catch(() => null);
  const block = receipt ? await client.getBlock({ blockNumber: receipt.blockNumber }) : null;
  const status = !receipt ? 'pending' : receipt.status === 'success' ? `<span class="ok">success</span>` : `<span class="bad">reverted</span>`;
  const events = receipt ? describeEvents(receipt, isToken) : { transfers: 'pending', authorizations: 'pending' };
  const entries: [string, string][] = [
    ['Transaction hash', code(tx.hash)],
    ['Status', status],
    ['Block', receipt ? escapeHtml(receipt.blockNumber) : 'pending'],
    ['Time', block ? escapeHtml(new Date(Number(block.timestamp) * 1000).toISOString()) : 'pending'],
    ['From', code(getAddress(tx.from))],
    ['To', tx.to ? `${code(getAddress(tx.to))}${isToken(tx.to) ? ' (sandbox USDC)' : ''}` : 'contract creation'],
    ['Call', escapeHtml(describeCall(tx, isToken))],
    ['Token transfers', events.transfers],
    ['Authorizations', events.authorizations],
    ['Gas used', receipt ? escapeHtml(receipt.gasUsed) : 'pending'],
  ];
  return { status: 200, html: page(`Sandbox transaction ${hash}`, `<h1>Sandbox transaction</h1>${rows(entries)}`) };
}
