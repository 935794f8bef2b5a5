// Browser wallets for the pages' scripts (bundled by npm run build, never run by the service): the
// wallets a page can use, announced by EIP-6963, else the one injected as window.ethereum.

export type Eip1193 = { request(args: { method: string; params?: unknown }): Promise<unknown> };
export type WalletInfo = { uuid: string; name: string; icon: string; rdns: string };
export type Wallet = { info: WalletInfo; provider: Eip1193 };

/**
 * Calls `changed` with every wallet found so far, and only when that set changes: at once for each
 * new EIP-6963 announcement (a wallet announcing itself again changes nothing), and once after
 * `fallbackMs` when none has announced itself — with window.ethereum if the browser injects one,
 * else with none, so the page can say that no wallet was found.
 */
export function discoverWallets(changed: (wallets: Wallet[]) => void, fallbackMs = 400): void {
  const wallets = new Map<string, Wallet>();
  window.addEventListener('eip6963:announceProvider', (event) => {
    const detail = (event as CustomEvent<Wallet>).detail;
    if (!detail?.info?.uuid || typeof detail.provider?.request !== 'function') return;
    if (wallets.get(detail.info.uuid)?.provider === detail.provider) return;
    wallets.set(detail.info.uuid, detail);
    changed([...wallets.values()]);
  });
  window.dispatchEvent(new Event('eip6963:requestProvider'));
  setTimeout(() => {
    if (wallets.size) return;
    const injected = (window as unknown as { ethereum?: Eip1193 }).ethereum;
    if (injected && typeof injected.request === 'function')
      wallets.set('window.ethereum', { info: { uuid: 'window.ethereum', name: 'your browser wallet', icon: '', rdns: '' }, provider: injected });
    changed([...wallets.values()]);
  }, fallbackMs);
}

/** The chains a page may ask a wallet for: Base (live, and the sandbox that imitates it) and Base Sepolia (test mode there). */
const CHAINS: Record<number, { name: string; explorer: string }> = {
  8453: { name: 'Base', explorer: 'https://basescan.org' },
  84532: { name: 'Base Sepolia', explorer: 'https://sepolia.basescan.org' },
};

/**
 * Asks the wallet to be on the chain typed data is signed for (wallets sign only for the chain they
 * are on), adding it first when the wallet does not know it (error 4902), with the RPC URL given.
 */
export async function switchToChain(provider: Eip1193, chainHex: string, rpcUrl: string, say: (line: string) => void): Promise<void> {
  const current = await provider.request({ method: 'eth_chainId' });
  if (typeof current === 'string' && BigInt(current) === BigInt(chainHex)) return;
  const chain = CHAINS[Number(BigInt(chainHex))] ?? CHAINS[8453]!;
  say(`Asking your wallet to switch to the ${chain.name} network…`);
  try {
    await provider.request({ method: 'wallet_switchEthereumChain', params: [{ chainId: chainHex }] });
  } catch (error) {
    if ((error as { code?: number }).code !== 4902) throw error;
    await provider.request({
      method: 'wallet_addEthereumChain',
      params: [
        {
          chainId: chainHex,
          chainName: chain.name,
          nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
          rpcUrls: [rpcUrl],
          blockExplorerUrls: [chain.explorer],
        },
      ],
    });
  }
}
