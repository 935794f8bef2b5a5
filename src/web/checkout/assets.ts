import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { build } from 'esbuild';

const HERE = import.meta.dirname;

export type CheckoutAssets = { css: string; script: string; sandboxWallet: string };

/** Bundles one browser entry point (TypeScript, with what it imports) into one minified script. */
async function bundle(entry: string): Promise<string> {
  const result = await build({
    entryPoints: [join(HERE, 'browser', entry)],
    bundle: true,
    minify: true,
    format: 'iife',
    target: ['es2022'],
    platform: 'browser',
    write: false,
    legalComments: 'none',
    logLevel: 'silent',
  });
  return result.outputFiles[0]!.text;
}

let built: Promise<CheckoutAssets> | undefined;

/**
 * The page's stylesheet and scripts, built with esbuild from `browser/` when the service starts
 * (never a checked-in bundle). The output depends only on the sources, so one build serves every
 * app in the process.
 */
export function checkoutAssets(): Promise<CheckoutAssets> {
  built ??= Promise.all([bundle('checkout.ts'), bundle('sandbox-wallet.ts')]).then(([script, sandboxWallet]) => ({
    css: readFileSync(join(HERE, 'checkout.css'), 'utf8'),
    script,
    sandboxWallet,
  }));
  return built;
}
