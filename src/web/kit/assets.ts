import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../../context.ts';
import { registerFavicon } from './favicon.ts';

/**
 * The pages' stylesheets and browser scripts, built once by `npm run build` (scripts/build-assets.ts,
 * run by `prepare`, so `npm ci` builds them) into `dist/assets/` with content-hashed names and a
 * manifest. The service never builds them: it reads the manifest and the files when it starts and
 * fails with a clear message when they are missing.
 */
export const ASSET_SOURCES = {
  'till.css': 'src/web/kit/till.css',
  'checkout.css': 'src/web/checkout/checkout.css',
  'checkout.js': 'src/web/checkout/browser/checkout.ts',
  'checkout-sandbox-wallet.js': 'src/web/checkout/browser/sandbox-wallet.ts',
  'dashboard.js': 'src/web/dashboard/browser/dashboard.ts',
  'dashboard-sandbox-wallet.js': 'src/web/dashboard/browser/sandbox-payout-wallet.ts',
  'passkeys.js': 'src/web/kit/browser/passkeys.ts',
} as const;

export type AssetName = keyof typeof ASSET_SOURCES;

/** Served only by a deployment that serves test mode (the pages of test sessions load them). */
const SANDBOX_ONLY: ReadonlySet<AssetName> = new Set(['checkout-sandbox-wallet.js', 'dashboard-sandbox-wallet.js']);

/** Where the build writes; the repository's `dist/assets/` (gitignored). */
export const ASSETS_DIR = join(import.meta.dirname, '..', '..', '..', 'dist', 'assets');
export const MANIFEST_FILE = 'manifest.json';

/** The manifest: each asset's logical name → its file name in ASSETS_DIR (`checkout.3f9a1c0b72de.js`). */
export type AssetManifest = Record<AssetName, string>;

type Asset = { name: AssetName; file: string; body: Buffer; type: string };

export class AssetsNotBuiltError extends Error {
  constructor(problem: string) {
    super(`The pages' stylesheets and scripts are not built (${problem}): run npm run build`);
    this.name = 'AssetsNotBuiltError';
  }
}

let loaded: Map<string, Asset> | undefined;
let hrefs: Map<AssetName, string> | undefined;

/**
 * Reads the built assets into memory, once per process (they are small, and a rebuild while the
 * service runs cannot then change what it serves). Throws AssetsNotBuiltError when the build is
 * missing or incomplete.
 */
export function loadAssets(): ReadonlyMap<string, Asset> {
  if (loaded) return loaded;
  const manifestPath = join(ASSETS_DIR, MANIFEST_FILE);
  if (!existsSync(manifestPath)) throw new AssetsNotBuiltError(`no ${manifestPath}`);
  const manifest = JSON.parse(readFileSync(manifestPath, 'utf8')) as Partial<AssetManifest>;
  const byFile = new Map<string, Asset>();
  const byName = new Map<AssetName, string>();
  for (const name of Object.keys(ASSET_SOURCES) as AssetName[]) {
    const file = manifest[name];
    if (!file || !existsSync(join(ASSETS_DIR, file))) throw new AssetsNotBuiltError(`${name} is not in ${manifestPath}`);
    byFile.set(file, {
      name,
      file,
      body: readFileSync(join(ASSETS_DIR, file)),
      type: name.endsWith('.css') ? 'text/css; charset=utf-8' : 'text/javascript; charset=utf-8',
    });
    byName.set(name, `/assets/${file}`);
  }
  loaded = byFile;
  hrefs = byName;
  return loaded;
}

/** The URL pages link an asset at: its content-hashed name, cached for a year. */
export function assetHref(name: AssetName): string {
  loadAssets();
  return hrefs!.get(name)!;
}

/** Each asset's logical name → its built file's name. */
export function assetManifest(): AssetManifest {
  loadAssets();
  return Object.fromEntries([...hrefs!].map(([name, href]) => [name, href.slice('/assets/'.length)])) as AssetManifest;
}

/** Where pages link the shared stylesheet. */
export function stylesheetHref(): string {
  return assetHref('till.css');
}

const IMMUTABLE = 'public, max-age=31536000, immutable';

/**
 * `GET /assets/{file}`: a hashed name (`checkout.3f9a1c0b72de.js`) is answered with a year's
 * immutable caching; the stable name (`/assets/checkout.js`, `/assets/till.css`, which older pages
 * and the framework edge's own pages link) with the same bytes, revalidated on every use.
 */
export function registerAssets(app: FastifyInstance, context: AppContext): void {
  const assets = loadAssets();
  const sandbox = context.config.modes.includes('sandbox');
  const served = new Map<string, { asset: Asset; cacheControl: string }>();
  for (const asset of assets.values()) {
    if (SANDBOX_ONLY.has(asset.name) && !sandbox) continue;
    served.set(asset.file, { asset, cacheControl: IMMUTABLE });
    served.set(asset.name, { asset, cacheControl: 'no-cache' });
  }
  app.get<{ Params: { file: string } }>('/assets/:file', async (request, reply) => {
    const found = served.get(request.params.file);
    if (!found) return reply.callNotFound();
    return reply.type(found.asset.type).header('cache-control', found.cacheControl).send(found.asset.body);
  });
  registerFavicon(app);
}
