// Sandbox wallets for the pages' scripts (bundled by npm run build, never run by the service; loaded
// only by pages of test mode): a wallet that needs no browser extension, signing in the tab with a
// key it is given, announced over EIP-6963 like any injected wallet. The hosted page's makes a
// throwaway key funded from the faucet; the refund form's holds the sandbox demo payout key.
import type { PrivateKeyAccount } from 'viem/accounts';

const ICON = `data:image/svg+xml,${encodeURIComponent('<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24"><rect width="24" height="24" rx="6" fill="#a16207"/><text x="12" y="17" font-size="14" text-anchor="middle" fill="#fff" font-family="sans-serif">S</text></svg>')}`;

/** A JSON POST to the service's own sandbox routes (faucet, RPC). */
export async function postSandbox(path: string, body: unknown): Promise<Record<string, unknown>> {
  const response = await fetch(path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const json = (await response.json().catch(() => ({}))) as Record<string, unknown>;
  if (!response.ok) throw new Error(`the sandbox answered ${response.status}`);
  return json;
}

async function rpc(method: string, params: unknown): Promise<unknown> {
  const answer = await postSandbox('/sandbox/rpc', { jsonrpc: '2.0', id: 1, method, params: params ?? [] });
  if (answer.error) throw Object.assign(new Error(String((answer.error as { message?: string }).message)), { code: (answer.error as { code?: number }).code });
  return answer.result;
}

type TypedData = {
  types: Record<string, { name: string; type: string }[]>;
  primaryType: string;
  domain: Record<string, unknown>;
  message: Record<string, unknown>;
};

async function signTypedData(signer: PrivateKeyAccount, json: string): Promise<string> {
  const typed = JSON.parse(json) as TypedData;
  const { EIP712Domain: _domain, ...types } = typed.types;
  const message: Record<string, unknown> = { ...typed.message };
  for (const field of types[typed.primaryType] ?? []) if (/^u?int\d*$/.test(field.type)) message[field.name] = BigInt(String(message[field.name]));
  return signer.signTypedData({
    domain: { ...typed.domain, chainId: Number(typed.domain.chainId) },
    types,
    primaryType: typed.primaryType,
    message,
  } as Parameters<PrivateKeyAccount['signTypedData']>[0]);
}

/**
 * Announces a sandbox wallet: `connect` gives its account the first time a page asks for it
 * (eth_requestAccounts); it is on Base (the sandbox chain's id), signs typed data in the tab, and
 * sends every other call to the sandbox's RPC.
 */
export function announceSandboxWallet(info: { uuid: string; name: string; rdns: string }, connect: () => Promise<PrivateKeyAccount>): void {
  let account: PrivateKeyAccount | undefined;
  const provider = {
    async request({ method, params }: { method: string; params?: unknown }): Promise<unknown> {
      switch (method) {
        case 'eth_requestAccounts':
          account ??= await connect();
          return [account.address];
        case 'eth_accounts':
          return account ? [account.address] : [];
        case 'eth_chainId':
          return '0x2105';
        case 'wallet_switchEthereumChain':
        case 'wallet_addEthereumChain':
          return null;
        case 'eth_signTypedData_v4': {
          if (!account) throw Object.assign(new Error('Not connected'), { code: 4100 });
          return signTypedData(account, (params as [string, string])[1]);
        }
        default:
          return rpc(method, params);
      }
    },
  };
  const detail = Object.freeze({ info: Object.freeze({ ...info, icon: ICON }), provider });
  const announce = () => window.dispatchEvent(new CustomEvent('eip6963:announceProvider', { detail }));
  window.addEventListener('eip6963:requestProvider', announce);
  announce();
}
