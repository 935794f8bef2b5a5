// Builds the pages' stylesheets and browser scripts once, into dist/assets/ (gitignored): scripts
// bundled and minified by esbuild, stylesheets minified, each file named by a hash of its content,
// and manifest.json mapping each logical name (`checkout.js`) to its file (`checkout.3f9a1c0b72de.js`).
// `npm run build` runs it; so does `prepare`, so `npm ci` and `npm install` build. The service only
// reads the result (src/web/kit/assets.ts). With `--if-available` (as `prepare` runs it), an install
// without dev dependencies, where esbuild is missing, skips the build instead of failing.
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { extname, join } from 'node:path';
import { ASSET_SOURCES, ASSETS_DIR, type AssetManifest, type AssetName, MANIFEST_FILE } from '../src/web/kit/assets.ts';

const ROOT = join(import.meta.dirname, '..');

type Esbuild = typeof import('esbuild');
let esbuild: Esbuild;
try {
  esbuild = await import('esbuild');
} catch (error) {
  if (!process.argv.includes('--if-available')) throw error;
  process.stdout.write('esbuild is not installed (no dev dependencies): the page assets were not built. Build them where it is: npm run build\n');
  process.exit(0);
}

async function build(source: string): Promise<string> {
  const path = join(ROOT, source);
  if (source.endsWith('.css')) return (await esbuild.transform(readFileSync(path, 'utf8'), { loader: 'css', minify: true, logLevel: 'silent' })).code;
  const result = await esbuild.build({
    entryPoints: [path],
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

function writeWhole(file: string, body: string): void {
  const temporary = join(ASSETS_DIR, `${file}.${process.pid}.tmp`);
  writeFileSync(temporary, body);
  renameSync(temporary, join(ASSETS_DIR, file));
}

mkdirSync(ASSETS_DIR, { recursive: true });
const manifest = {} as AssetManifest;
for (const [name, source] of Object.entries(ASSET_SOURCES) as [AssetName, string][]) {
  const body = await build(source);
  const hash = createHash('sha256').update(body).digest('hex').slice(0, 12);
  const extension = extname(name);
  const file = `${name.slice(0, -extension.length)}.${hash}${extension}`;
  // A name is its content: a file already there is this one. Written beside, then renamed, so a
  // service starting meanwhile (tests run several) never reads half a file.
  if (!existsSync(join(ASSETS_DIR, file))) writeWhole(file, body);
  manifest[name] = file;
}
// The manifest last, replaced in one step: a reader sees the old build or the new one, whole.
writeWhole(MANIFEST_FILE, `${JSON.stringify(manifest, null, 2)}\n`);
// Files of earlier builds go once they are an hour old (a build running beside this one may have
// just written the files its own manifest names).
const kept = new Set<string>([MANIFEST_FILE, ...Object.values(manifest)]);
for (const file of readdirSync(ASSETS_DIR)) {
  const path = join(ASSETS_DIR, file);
  if (!kept.has(file) && Date.now() - statSync(path).mtimeMs > 3_600_000) rmSync(path, { force: true });
}

const sizes = Object.values(manifest).map((file) => `${file} (${readFileSync(join(ASSETS_DIR, file)).length} B)`);
process.stdout.write(`Built ${sizes.length} assets into ${ASSETS_DIR}: ${sizes.join(', ')}\n`);
