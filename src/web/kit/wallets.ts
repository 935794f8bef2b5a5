// Browser wallets for the pages' scripts (bundled by npm run build, never run by the service): the
// wallets a page can use, announced by EIP-6963, else the one injected as window.ethereum.

export type Eip1193 = { request(args: { method: string; params?: unknown }): Promise<unknown> };
export type WalletInfo = { uuid: string; name: string; icon: string; rdns: string };
export type Wallet = { info: WalletInfo; provider: Eip1193 };

/** Calls `changed` with every wallet found so far: at once for each EIP-6963 announcement, and after `fallbackMs` with window.ethereum if none announced itself. */
export function discoverWallets(changed: (wallets: Wallet[]) => void, fallbackMs = 400): void {
  const wallets = new Map<string, Wallet>();
  window.addEventListener('eip6963:announceProvider', (event) => {
    const detail = (event as CustomEvent<Wallet>).detail;
    if (!detail?.info?.uuid || typeof detail.provider?.request !== 'function') return;
    wallets.set(detail.info.uuid, detail);
    changed([...wallets.values()]);
  });
  window.dispatchEvent(new Event('eip6963:requestProvider'));
  setTimeout(() => {
    const injected = (window as unknown as { ethereum?: Eip1193 }).ethereum;
    if (!wallets.size && injected && typeof injected.request === 'function')
      wallets.set('window.ethereum', { info: { uuid: 'window.ethereum', name: 'your browser wallet', icon: '', rdns: '' }, provider: injected });
    changed([...wallets.values()]);
  }, fallbackMs);
}
