/**
 * What the compiled executable (`bun run build`, scripts/build.ts) needs that would otherwise be
 * found next to node_modules. Run from source (or under `bun test`) there is nothing to do: every
 * field is undefined and each library finds its own files.
 *
 * scripts/build.ts embeds these files in the executable (`compile.assets`, readable by path under
 * the executable's virtual root):
 *  - PGlite's pglite.wasm, initdb.wasm, pglite.data: handed to PGlite as a module and a Blob;
 *  - pgvector's vector.tar.gz: PGlite reads it with a stream Bun cannot open on an embedded file,
 *    so it is written out;
 *  - the offline model folder and onnxruntime-node's addon with its libonnxruntime.so.1: native
 *    code opens them by path, so they are written out too.
 * Written-out files (about 100 MB) go once into a private folder under the temp directory (TMPDIR;
 * it must allow loading libraries, i.e. not be mounted noexec), named after a digest of the embedded
 * files, and are reused by every later start (and rebuild) with the same files.
 */
import { existsSync, lstatSync, mkdirSync, renameSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import type { PgliteAssets } from "../adapters/pglite/pglite-client.ts";

export interface RuntimeAssets {
  pglite?: Required<PgliteAssets>;
  modelDir?: string;
}

/** The embedded files, by their name inside the executable; scripts/build.ts embeds exactly these. */
export const EMBEDDED = {
  pgliteWasm: "pglite.wasm",
  initdbWasm: "initdb.wasm",
  pgliteData: "pglite.data",
  vectorBundle: "vector.tar.gz",
  onnxruntimeBinding: "onnxruntime_binding.node",
  onnxruntimeLibrary: "libonnxruntime.so.1",
  /** A folder: the whole offline model. */
  model: "all-MiniLM-L6-v2",
} as const;

/**
 * scripts/build.ts makes onnxruntime-node require its addon from the path held in this global,
 * since its own path (computed, next to node_modules) does not exist in the executable.
 */
export const ONNXRUNTIME_BINDING_GLOBAL = "__skuSearchOnnxruntimeBinding";

/** scripts/build.ts defines this constant as a digest of the embedded files. */
export const ASSETS_DIGEST_CONSTANT = "SKU_SEARCH_ASSETS_DIGEST";
declare const SKU_SEARCH_ASSETS_DIGEST: string | undefined;

/** Which parts the process will use: each costs startup time (compiling WASM, writing files). */
export interface RuntimeAssetNeeds {
  /** The embedded database (DATABASE_URL unset). */
  pglite?: boolean;
  /** The offline embedding model. */
  localModel?: boolean;
}

/**
 * Resolves the assets asked for (by default all); call it at startup, before anything opens PGlite
 * or the model. Each part is prepared once per process, however many times it is asked for.
 * Outside the executable it returns `{}` at once.
 */
export async function resolveRuntimeAssets(
  needs: RuntimeAssetNeeds = { pglite: true, localModel: true },
): Promise<RuntimeAssets> {
  if (!Bun.isStandaloneExecutable) return {};
  const [pglite, modelDir] = await Promise.all([
    needs.pglite ? preparePglite() : undefined,
    needs.localModel ? prepareLocalModel() : undefined,
  ]);
  return { pglite, modelDir };
}

function once<T>(prepare: () => Promise<T>): () => Promise<T> {
  let result: Promise<T> | undefined;
  return () => {
    result ??= prepare();
    return result;
  };
}

const preparePglite = once(async (): Promise<Required<PgliteAssets>> => {
  const cache = privateCacheDir();
  await writeOut(cache, [EMBEDDED.vectorBundle]);
  const [pgliteWasmModule, initdbWasmModule] = await Promise.all([
    WebAssembly.compile(await embedded(EMBEDDED.pgliteWasm).arrayBuffer()),
    WebAssembly.compile(await embedded(EMBEDDED.initdbWasm).arrayBuffer()),
  ]);
  return {
    pgliteWasmModule,
    initdbWasmModule,
    fsBundle: embedded(EMBEDDED.pgliteData),
    vectorBundlePath: join(cache, EMBEDDED.vectorBundle),
  };
});

const prepareLocalModel = once(async (): Promise<string> => {
  const cache = privateCacheDir();
  const modelFiles = Bun.embeddedFiles
    .map((file) => (file as File).name)
    .filter((name) => name.startsWith(`${EMBEDDED.model}/`));
  await writeOut(cache, [EMBEDDED.onnxruntimeBinding, EMBEDDED.onnxruntimeLibrary, ...modelFiles]);
  // The addon finds libonnxruntime.so.1 beside itself (its RUNPATH is $ORIGIN).
  const binding = join(cache, EMBEDDED.onnxruntimeBinding);
  try {
    require(binding); // loaded now, so that a failure stops the start with its cause
  } catch (error) {
    throw new Error(
      `cannot load onnxruntime from ${cache}: ${(error as Error).message} ` +
        "(if the temp folder is mounted noexec, set TMPDIR to one that is not)",
    );
  }
  (globalThis as Record<string, unknown>)[ONNXRUNTIME_BINDING_GLOBAL] = binding;
  return join(cache, EMBEDDED.model);
});

/** An embedded file, by its name inside the executable. */
function embedded(name: string): Blob {
  return Bun.file(join(import.meta.dir, name));
}

/** A folder only this user can write (native code is loaded from it), one per set of embedded files. */
function privateCacheDir(): string {
  if (typeof SKU_SEARCH_ASSETS_DIGEST !== "string") {
    throw new Error("this executable was not built by `bun run build` (scripts/build.ts): its files are missing");
  }
  const uid = process.getuid?.() ?? 0;
  const root = join(tmpdir(), `sku-search-${uid}`);
  mkdirSync(root, { recursive: true, mode: 0o700 });
  const stat = lstatSync(root);
  if (!stat.isDirectory() || stat.uid !== uid || (stat.mode & 0o077) !== 0) {
    throw new Error(`${root} must be a folder owned by user ${uid} that no one else can write (mode 700)`);
  }
  return join(root, SKU_SEARCH_ASSETS_DIGEST);
}

/** Copies embedded files into `dir` under the same relative names, skipping those already there. */
async function writeOut(dir: string, names: readonly string[]): Promise<void> {
  for (const name of names) {
    const source = embedded(name);
    const target = join(dir, name);
    if (existsSync(target) && statSync(target).size === source.size) continue;
    mkdirSync(dirname(target), { recursive: true, mode: 0o700 });
    // Written aside, then renamed: a reader never sees half a file, even with two processes starting.
    const partial = `${target}.${process.pid}.partial`;
    await Bun.write(partial, source);
    renameSync(partial, target);
  }
}
