/**
 * `bun run build`: compiles src/app/main.ts (and the offline model's worker) into one self-contained executable, dist/sku-search,
 * for the current platform (Linux, x64 or arm64). It embeds PGlite's files, a new empty database
 * (made here, so that a first start need not run initdb), pgvector, pg_trgm, the offline model and
 * onnxruntime's native addon; src/app/runtime-assets.ts hands them over (or writes them out) at
 * startup. The search page (src/ui) is bundled here and carried in a constant (ui-bundle.ts).
 *
 * `bun run build --assets-beside` (the container image): the files native code opens by path
 * (pgvector's and pg_trgm's bundles, the model, onnxruntime) are not embedded but laid out in
 * dist/sku-search-assets/<digest>/, where the executable uses them without writing anything.
 * Needs `bun install` first (it installs the model).
 */
import { cpSync, existsSync, mkdtempSync, readdirSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, dirname, join, relative, resolve } from "node:path";
import type { BunPlugin } from "bun";
import { bundleUi, serializeUiBundle, UI_BUNDLE_CONSTANT } from "../src/adapters/http/ui/ui-bundle.ts";
import { makeNewDatabase } from "../src/adapters/pglite/new-database.ts";
import { INSTALLED_MODEL_DIR, ONNXRUNTIME_BINDING_GLOBAL } from "../src/adapters/providers/local-model-files.ts";
import { BESIDE_FOLDER, BUILD_CONSTANTS, EMBEDDED, ENTRY_POINTS, ON_DISK } from "../src/app/runtime-assets.ts";

const options = process.argv.slice(2);
const unknown = options.filter((option) => option !== "--assets-beside");
if (unknown.length > 0) {
  console.error(`unknown option ${unknown.join(" ")}; usage: bun run build [--assets-beside]`);
  process.exit(1);
}
const assetsBeside = options.includes("--assets-beside");

const root = resolve(import.meta.dir, "..");
const dist = join(root, "dist");
const outfile = join(dist, "sku-search");
const packageDir = (name: string) => dirname(Bun.resolveSync(`${name}/package.json`, root));

const pgliteDist = join(packageDir("@electric-sql/pglite"), "dist");
const onnxruntimeBin = join(packageDir("onnxruntime-node"), "bin/napi-v6/linux", process.arch);
// Under their base names (a folder keeps its inner layout), as EMBEDDED and ON_DISK name them.
const embedded = [
  join(pgliteDist, EMBEDDED.pgliteWasm),
  join(pgliteDist, EMBEDDED.initdbWasm),
  join(pgliteDist, EMBEDDED.pgliteData),
];
const onDisk = [
  join(packageDir("@electric-sql/pglite-pgvector"), "dist", ON_DISK.vectorBundle),
  join(pgliteDist, ON_DISK.trgmBundle),
  join(onnxruntimeBin, ON_DISK.onnxruntimeBinding),
  join(onnxruntimeBin, ON_DISK.onnxruntimeLibrary),
  INSTALLED_MODEL_DIR,
];
const missing = [...embedded, ...onDisk].filter((path) => !existsSync(path));
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

/** Names the folder the ON_DISK files are used from: a rebuild with the same files reuses it. */
async function digestOf(paths: string[]): Promise<string> {
  const hasher = new Bun.CryptoHasher("sha256");
  for (const file of paths.flatMap(filesAt)) hasher.update(relative(root, file)).update(await Bun.file(file).bytes());
  return hasher.digest("hex").slice(0, 16);
}

/** PGlite's own initdb, run now in memory, packed as the tarball a first start unpacks. */
async function writeDatabaseTemplate(dir: string): Promise<string> {
  const path = join(dir, EMBEDDED.pgdataTemplate);
  await Bun.write(path, await makeNewDatabase("gzip"));
  return path;
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
    // onnxruntime-node requires its addon by a computed path; runtime-assets says where it is.
    patch(
      build,
      /onnxruntime-node[\\/]dist[\\/]binding\.js$/,
      /require\(`\.\.\/bin\/napi-v6\/[^`]*onnxruntime_binding\.node`\)/,
      `require(globalThis.${ONNXRUNTIME_BINDING_GLOBAL} ?? "onnxruntime_binding.node: LocalModel was not given the addon's path")`,
    );
  },
};

const digest = await digestOf(onDisk);
const besideDir = join(dist, BESIDE_FOLDER);
rmSync(besideDir, { recursive: true, force: true }); // a previous build's, either way
const work = mkdtempSync(join(tmpdir(), "sku-search-build-"));
try {
  embedded.push(await writeDatabaseTemplate(work));
  // The search page (/ui), bundled now and carried in a constant: the executable never bundles.
  const ui = serializeUiBundle(await bundleUi());
  const result = await Bun.build({
    // The offline model's worker is an entry point of its own (a Worker needs its module by path).
    entrypoints: Object.values(ENTRY_POINTS).map((path) => join(root, "src", path)),
    plugins: [executablePlugin],
    minify: { syntax: true, whitespace: true }, // identifiers kept: readable stack traces
    define: {
      [BUILD_CONSTANTS.digest]: JSON.stringify(digest),
      [BUILD_CONSTANTS.beside]: JSON.stringify(assetsBeside),
      [UI_BUNDLE_CONSTANT]: JSON.stringify(ui),
    },
    // No target: the running Bun is the one embedded, so nothing is downloaded. The executable reads
    // a .env file in its working directory (the settings), never a bunfig.toml.
    compile: { outfile, assets: assetsBeside ? embedded : [...embedded, ...onDisk], autoloadBunfig: false },
  });
  if (!result.success) {
    for (const log of result.logs) console.error(log);
    process.exit(1);
  }
  if (assetsBeside) {
    for (const path of onDisk) cpSync(path, join(besideDir, digest, basename(path)), { recursive: true });
  }
  const megabytes = (path: string) =>
    `${(filesAt(path).reduce((sum, file) => sum + statSync(file).size, 0) / 1e6).toFixed(1)} MB`;
  const where = assetsBeside ? `lays out in ${relative(root, besideDir)}/${digest}/` : "embeds";
  for (const path of embedded) console.log(`  embeds ${basename(path)}  ${megabytes(path)}`);
  for (const path of onDisk) console.log(`  ${where} ${basename(path)}  ${megabytes(path)}`);
  console.log(`  embeds the search page (/ui, src/ui)  ${(ui.length / 1e6).toFixed(2)} MB`);
  console.log(`${relative(root, outfile)}  ${megabytes(outfile)}`);
} finally {
  rmSync(work, { recursive: true, force: true });
}
