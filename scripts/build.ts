/**
 * `bun run build`: compiles src/app/main.ts into one self-contained executable, dist/sku-search,
 * for the current platform (Linux, x64 or arm64). It embeds PGlite's files, pgvector, the offline
 * model and onnxruntime's native addon; src/app/runtime-assets.ts hands them over (or writes them
 * out) at startup. Needs `bun install` first (it installs the model).
 */
import { existsSync, readdirSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import type { BunPlugin } from "bun";
import { INSTALLED_MODEL_DIR } from "../src/adapters/providers/local-embedder.ts";
import { ASSETS_DIGEST_CONSTANT, EMBEDDED, ONNXRUNTIME_BINDING_GLOBAL } from "../src/app/runtime-assets.ts";

const root = resolve(import.meta.dir, "..");
const outfile = join(root, "dist/sku-search");
const packageDir = (name: string) => dirname(Bun.resolveSync(`${name}/package.json`, root));

const pgliteDist = join(packageDir("@electric-sql/pglite"), "dist");
const onnxruntimeBin = join(packageDir("onnxruntime-node"), "bin/napi-v6/linux", process.arch);
// Embedded under their base names (a folder keeps its inner layout), as EMBEDDED names them.
const assets = [
  join(pgliteDist, EMBEDDED.pgliteWasm),
  join(pgliteDist, EMBEDDED.initdbWasm),
  join(pgliteDist, EMBEDDED.pgliteData),
  join(packageDir("@electric-sql/pglite-pgvector"), "dist", EMBEDDED.vectorBundle),
  join(onnxruntimeBin, EMBEDDED.onnxruntimeBinding),
  join(onnxruntimeBin, EMBEDDED.onnxruntimeLibrary),
  INSTALLED_MODEL_DIR,
];
const missing = assets.filter((path) => !existsSync(path));
if (missing.length > 0) {
  console.error(`missing ${missing.join(", ")}: run \`bun install\` first (it also installs the model)`);
  process.exit(1);
}

/** The files at `path` (itself, or those inside it), in a stable order. */
function filesAt(path: string): string[] {
  if (!statSync(path).isDirectory()) return [path];
  return readdirSync(path, { recursive: true, encoding: "utf8" })
    .sort()
    .map((name) => join(path, name))
    .filter((file) => statSync(file).isFile());
}

/** Names the folder the executable writes files out to: a rebuild with the same files reuses it. */
async function digestOf(paths: string[]): Promise<string> {
  const hasher = new Bun.CryptoHasher("sha256");
  for (const file of paths.flatMap(filesAt)) hasher.update(relative(root, file)).update(await Bun.file(file).bytes());
  return hasher.digest("hex").slice(0, 16);
}

/** Rewrites one exact piece of a dependency's file; fails the build if that piece is gone (upgraded). */
function patch(build: Bun.PluginBuilder, file: RegExp, from: RegExp | string, to: string): void {
  build.onLoad({ filter: file }, async ({ path }) => {
    const source = await Bun.file(path).text();
    const patched = source.replace(from, to);
    if (patched === source) throw new Error(`scripts/build.ts: ${path} no longer contains ${from}`);
    return { contents: patched, loader: "js" };
  });
}

const executablePlugin: BunPlugin = {
  name: "sku-search-executable",
  setup(build) {
    // transformers imports sharp (native, for images) at load time and only needs it to be there.
    build.onResolve({ filter: /^sharp$/ }, () => ({ path: "sharp", namespace: "sharp-stub" }));
    build.onLoad({ filter: /.*/, namespace: "sharp-stub" }, () => ({
      contents: 'export default function sharp() { throw new Error("images are not supported in this build"); }',
      loader: "js",
    }));
    // transformers loads onnxruntime-node through createRequire, which the bundler cannot follow.
    patch(
      build,
      /transformers[\\/]dist[\\/]transformers\.node\.mjs$/,
      'requireFromHere("onnxruntime-node")',
      'require("onnxruntime-node")',
    );
    // onnxruntime-node requires its addon by a computed path; runtime-assets writes it out and says where.
    patch(
      build,
      /onnxruntime-node[\\/]dist[\\/]binding\.js$/,
      /require\(`\.\.\/bin\/napi-v6\/[^`]*onnxruntime_binding\.node`\)/,
      `require(globalThis.${ONNXRUNTIME_BINDING_GLOBAL} ?? "onnxruntime_binding.node: resolveRuntimeAssets() was not called")`,
    );
  },
};

const result = await Bun.build({
  entrypoints: [join(root, "src/app/main.ts")],
  plugins: [executablePlugin],
  minify: { syntax: true, whitespace: true }, // identifiers kept: readable stack traces
  define: { [ASSETS_DIGEST_CONSTANT]: JSON.stringify(await digestOf(assets)) },
  // No target: the running Bun is the one embedded, so nothing is downloaded. The executable reads
  // a .env file in its working directory (the settings), never a bunfig.toml.
  compile: { outfile, assets, autoloadBunfig: false },
});
if (!result.success) {
  for (const log of result.logs) console.error(log);
  process.exit(1);
}

const megabytes = (path: string) =>
  `${(filesAt(path).reduce((sum, file) => sum + statSync(file).size, 0) / 1e6).toFixed(1)} MB`;
for (const asset of assets) console.log(`  embeds ${relative(root, asset)}  ${megabytes(asset)}`);
console.log(`${relative(root, outfile)}  ${megabytes(outfile)}`);
