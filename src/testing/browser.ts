// Browser tests: Debian's Chromium driven by playwright-core (never a downloaded browser), an
// injected EIP-1193 test wallet answered from Node, axe-core in the page, and screenshots.
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core';
import type { LocalAccount } from 'viem';

export const CHROMIUM = process.env.TILL_TEST_CHROMIUM ?? '/usr/bin/chromium';
export const ARTIFACTS = resolve(process.env.TILL_TEST_ARTIFACTS ?? resolve(import.meta.dirname, '../../artifacts'));

/** Why browser tests cannot run here, or false when they can. */
export const browserSkip: string | false = existsSync(CHROMIUM) ? false : `no Chromium at ${CHROMIUM} (apt-get install -y chromium)`;

export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run'],
  });
}

/**
 * A browser context whose pages' timers fire only when the test runs the clock (context.clock.runFor),
 * so a page's own delays happen exactly when the test says. Paused a second ahead of the real clock:
 * the pages' times of day (signed into payments) stay close to the service's.
 */
export async function contextWithPausedClock(browser: Browser, viewport: { width: number; height: number }): Promise<BrowserContext> {
  const context = await browser.newContext({ viewport });
  await context.clock.install();
  await context.clock.pauseAt(Date.now() + 1_000);
  return context;
}

/** A person who approves in their wallet when the test says: `approved` for the test wallet's signWhen, and `approve()`. */
export function heldApproval(): { approved: Promise<void>; approve: () => void } {
  let approve = () => {};
  const approved = new Promise<void>((resolve) => {
    approve = resolve;
  });
  return { approved, approve };
}

export type WalletCall = { method: string; params: unknown };

export type TestWalletOptions = {
  account: LocalAccount;
  /** The chain the wallet starts on, hex. */
  chainId?: string;
  /** Where eth_call goes: the sandbox chain's JSON-RPC. */
  rpcUrl: string;
  /** Answer eth_signTypedData_v4 with error 4001 (the user rejected). */
  rejectSignature?: boolean;
  /** Sign with this account instead (a signature that does not match `from`). */
  signWith?: LocalAccount;
  /** The wallet does not know Base: wallet_switchEthereumChain answers 4902 until it is added. */
  lacksBase?: boolean;
  /** eth_signTypedData_v4 waits for this before it signs: a person taking their time to approve. */
  signWhen?: Promise<void>;
};

/**
 * An EIP-1193 provider announced over EIP-6963 in the page, every request of which is answered here
 * in Node (page.exposeFunction): accounts, chain switching, eth_call through the sandbox RPC, and
 * eth_signTypedData_v4 signed by a viem account. Returns the calls it received.
 */
export async function injectTestWallet(page: Page, options: TestWalletOptions): Promise<WalletCall[]> {
  const calls: WalletCall[] = [];
  let chainId = options.chainId ?? '0x2105';
  let knowsBase = !options.lacksBase;
  await page.exposeFunction('tillTestWallet', async (method: string, paramsJson: string) => {
    const params = paramsJson ? JSON.parse(paramsJson) : undefined;
    calls.push({ method, params });
    switch (method) {
      case 'eth_requestAccounts':
      case 'eth_accounts':
        return { result: [options.account.address] };
      case 'eth_chainId':
        return { result: chainId };
      case 'wallet_switchEthereumChain':
        if (!knowsBase) return { error: { code: 4902, message: 'Unrecognized chain ID.' } };
        chainId = (params as [{ chainId: string }])[0].chainId;
        return { result: null };
      case 'wallet_addEthereumChain':
        knowsBase = true;
        chainId = (params as [{ chainId: string }])[0].chainId;
        return { result: null };
      case 'eth_signTypedData_v4': {
        await options.signWhen;
        if (options.rejectSignature) return { error: { code: 4001, message: 'User rejected the request.' } };
        const typed = JSON.parse((params as [string, string])[1]);
        const { EIP712Domain: _domain, ...types } = typed.types;
        const message = { ...typed.message };
        for (const field of types[typed.primaryType]) if (field.type.startsWith('uint')) message[field.name] = BigInt(message[field.name]);
        const signature = await (options.signWith ?? options.account).signTypedData!({ domain: typed.domain, types, primaryType: typed.primaryType, message });
        return { result: signature };
      }
      default: {
        const response = await fetch(options.rpcUrl, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
        });
        const answer = (await response.json()) as { result?: unknown; error?: { code: number; message: string } };
        return answer.error ? { error: answer.error } : { result: answer.result };
      }
    }
  });
  await page.addInitScript(() => {
    type Answer = { result?: unknown; error?: { code: number; message: string } };
    const call = (window as unknown as { tillTestWallet: (method: string, params: string) => Promise<Answer> }).tillTestWallet;
    const provider = {
      async request({ method, params }: { method: string; params?: unknown }) {
        const answer = await call(method, params === undefined ? '' : JSON.stringify(params));
        if (answer.error) throw Object.assign(new Error(answer.error.message), { code: answer.error.code });
        return answer.result;
      },
    };
    const detail = Object.freeze({
      info: {
        uuid: '6f1c2c7e-0000-4000-8000-000000000001',
        name: 'Test Wallet',
        icon: 'data:image/svg+xml,%3Csvg xmlns=%22http://www.w3.org/2000/svg%22/%3E',
        rdns: 'test.wallet',
      },
      provider,
    });
    const announce = () => window.dispatchEvent(new CustomEvent('eip6963:announceProvider', { detail }));
    window.addEventListener('eip6963:requestProvider', announce);
    announce();
  });
  return calls;
}

const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

export type AxeViolation = { id: string; impact: string | null; help: string; nodes: { target: unknown[] }[] };

/** axe-core's serious and critical violations in the page as it is now. */
export async function seriousViolations(page: Page): Promise<AxeViolation[]> {
  await page.evaluate(AXE_SOURCE);
  const results = await page.evaluate(async () => {
    const axe = (window as unknown as { axe: { run(context: Document): Promise<{ violations: AxeViolation[] }> } }).axe;
    return (await axe.run(document)).violations;
  });
  return results.filter((v) => v.impact === 'serious' || v.impact === 'critical');
}

const PHONE_AND_DESKTOP: ReadonlyArray<readonly [number, number]> = [
  [360, 740],
  [1280, 900],
];

/** A phone and a desktop screenshot of the page (or the sizes given), under artifacts/<folder>/<name>-<width>x<height>.png. */
export async function screenshots(page: Page, folder: string, name: string, sizes = PHONE_AND_DESKTOP): Promise<string[]> {
  const dir = join(ARTIFACTS, folder);
  mkdirSync(dir, { recursive: true });
  const paths: string[] = [];
  for (const [width, height] of sizes) {
    await page.setViewportSize({ width, height });
    const path = join(dir, `${name}-${width}x${height}.png`);
    await page.screenshot({ path, fullPage: true });
    paths.push(path);
  }
  return paths;
}

/** Fails with axe-core's serious and critical violations in the page as it is now, each with its elements. */
export async function assertAccessible(page: Page): Promise<void> {
  const violations = await seriousViolations(page);
  if (violations.length)
    throw new Error(
      `axe-core found serious violations:\n${violations.map((v) => `${v.id}: ${v.help} ${JSON.stringify(v.nodes.map((n) => n.target))}`).join('\n')}`,
    );
}

/** Types into the field of a label, as a person does: a click, then keys. */
export async function typeInto(page: Page, label: string, text: string): Promise<void> {
  await page.getByLabel(label, { exact: true }).click();
  await page.keyboard.type(text);
}

/** A buyer, in a browser context of their own, pays a hosted checkout page with the sandbox wallet and sees it paid. */
export async function payWithSandboxWallet(browser: Browser, checkoutUrl: string): Promise<void> {
  const buyer = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  try {
    const checkout = await buyer.newPage();
    await checkout.goto(checkoutUrl);
    await checkout.getByRole('button', { name: /Pay with Sandbox wallet/ }).click();
    await checkout.locator('#outcome').getByText('Paid. Thank you!').waitFor({ timeout: 60_000 });
  } finally {
    await buyer.close();
  }
}
