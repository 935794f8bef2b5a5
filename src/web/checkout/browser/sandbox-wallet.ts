// Sandbox only (loaded by the page in sandbox mode): a wallet that needs no browser extension. A
// throwaway key made in this tab, funded from the sandbox faucet when it connects, signing locally,
// announced over EIP-6963 like any injected wallet. The key lives in memory and is gone on reload.
import { generatePrivateKey, type PrivateKeyAccount, privateKeyToAccount } from 'viem/accounts';

const FAUCET_USDC = '100';
const ICON = `data:image/svg+xml,${encodeURIComponent('<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24"><rect width="24" height="24" rx="6" fill="#a16207"/><text x="12" y="17" font-size="14" text-anchor="middle" fill="#fff" font-family="sans-serif">S</text></svg>')}`;

let account: PrivateKeyAccount | undefined;

async function post(path: string, body: unknown): Promise<Record<string, unknown>> {
  const response = await fetch(path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const json = (await response.json().catch(() => ({}))) as Record<string, unknown>;
  if (!response.ok) throw new Error(`the sandbox answered ${response.status}`);
  return json;
}

async function rpc(method: string, params: unknown): Promise<unknown> {
  const answer = await post('/sandbox/rpc', { jsonrpc: '2.0', id: 1, method, params: params ?? [] });
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

const provider = {
  async request({ method, params }: { method: string; params?: unknown }): Promise<unknown> {
    switch (method) {
      case 'eth_requestAccounts':
        if (!account) {
          const fresh = privateKeyToAccount(generatePrivateKey());
          await post('/sandbox/faucet', { address: fresh.address, usdc: FAUCET_USDC });
          account = fresh;
        }
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

const detail = Object.freeze({
  info: Object.freeze({ uuid: 'a4d7c0de-5a9d-4b0c-9c1e-5a9db0c1e5a9', name: 'Sandbox wallet (test USDC, no extension)', icon: ICON, rdns: 'dev.till.sandbox' }),
  provider,
});
const announce = () => window.dispatchEvent(new CustomEvent('eip6963:announceProvider', { detail }));
window.addEventListener('eip6963:requestProvider', announce);
announce();
