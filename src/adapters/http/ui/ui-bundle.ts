/**
 * The search page (src/ui/), bundled by Bun's own bundler from its HTML entry point: the page
 * itself plus its script, stylesheet and icon under content-hashed names.
 *
 * Run from source (`bun start`, the tests), the page is bundled in memory on first use (about
 * 50 ms; nothing generated is written or committed). The executable built by scripts/build.ts
 * carries the bundle made at build time in the constant SKU_SEARCH_UI_BUNDLE, and never bundles.
 */
import { join } from "node:path";

/** Where the page finds its files (the bundler writes these absolute URLs into the page). */
export const UI_ASSETS_PREFIX = "/ui/assets/";

/** The name of the build-time constant that carries the bundle in the executable (see serializeUiBundle). */
export const UI_BUNDLE_CONSTANT = "SKU_SEARCH_UI_BUNDLE";
declare const SKU_SEARCH_UI_BUNDLE: string | undefined;

const UI_ENTRY = join(import.meta.dir, "../../../ui/index.html");

export interface UiFile {
  /** The media type, charset included for text. */
  type: string;
  bytes: Uint8Array;
}

export interface UiBundle {
  page: UiFile;
  /** The script, stylesheet and icon, by file name (e.g. `index-3v305967.css`). */
  assets: ReadonlyMap<string, UiFile>;
}

/** Bundles src/ui/index.html and what it references, in memory. */
export async function bundleUi(): Promise<UiBundle> {
  const result = await Bun.build({
    entrypoints: [UI_ENTRY],
    target: "browser",
    minify: true,
    publicPath: UI_ASSETS_PREFIX,
    naming: { entry: "[name]-[hash].[ext]", chunk: "[name]-[hash].[ext]", asset: "[name]-[hash].[ext]" },
  });
  if (!result.success) throw new AggregateError(result.logs, "the search page (src/ui) does not bundle");
  let page: UiFile | undefined;
  const assets = new Map<string, UiFile>();
  for (const output of result.outputs) {
    const file = { type: output.type, bytes: new Uint8Array(await output.arrayBuffer()) };
    const name = output.path.replace(/^\.\//, "");
    if (name.endsWith(".html")) page = file;
    else assets.set(name, file);
  }
  if (!page) throw new Error("the search page (src/ui) bundled without its HTML");
  return { page, assets };
}

interface SerializedFile {
  name: string;
  type: string;
  base64: string;
}

/** The bundle as the string scripts/build.ts stores in SKU_SEARCH_UI_BUNDLE. */
export function serializeUiBundle(bundle: UiBundle): string {
  const file = (name: string, { type, bytes }: UiFile): SerializedFile => ({
    name,
    type,
    base64: Buffer.from(bytes).toString("base64"),
  });
  return JSON.stringify({
    page: file("index.html", bundle.page),
    assets: [...bundle.assets].map(([name, asset]) => file(name, asset)),
  });
}

function deserializeUiBundle(text: string): UiBundle {
  const parsed = JSON.parse(text) as { page: SerializedFile; assets: SerializedFile[] };
  const file = ({ type, base64 }: SerializedFile): UiFile => ({ type, bytes: Buffer.from(base64, "base64") });
  return { page: file(parsed.page), assets: new Map(parsed.assets.map((asset) => [asset.name, file(asset)])) };
}

let loaded: Promise<UiBundle> | undefined;

/** The page's bundle: the executable's own, else made now (once; a failure is retried on the next call). */
export function loadUiBundle(): Promise<UiBundle> {
  if (typeof SKU_SEARCH_UI_BUNDLE === "string") {
    loaded ??= Promise.resolve(deserializeUiBundle(SKU_SEARCH_UI_BUNDLE));
  }
  loaded ??= bundleUi().catch((error) => {
    loaded = undefined;
    throw error;
  });
  return loaded;
}
