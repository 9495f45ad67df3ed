/**
 * What the compiled executable (`bun run build`, scripts/build.ts) needs that would otherwise be
 * found next to node_modules. Run from source (or under `bun test`) each library finds its own
 * files; only the new database a first start unpacks comes from models/ (`bun install` made it).
 *
 * Read from memory, always embedded in the executable (`compile.assets`, readable by path under
 * its virtual root): PGlite's pglite.wasm, initdb.wasm and pglite.data, handed to PGlite as modules
 * and a Blob, and a new empty database made by the build (pgdata.tar.gz), which a first start
 * unpacks instead of running initdb (about 2 s and 450 MB of memory less).
 *
 * Opened by path (ON_DISK): pgvector's vector.tar.gz and PGlite's pg_trgm.tar.gz (PGlite reads
 * them with a stream Bun cannot open on an embedded file), the offline model folder, and onnxruntime-node's addon with its
 * libonnxruntime.so.1 (native code). Where they are is decided at build time:
 *  - `bun run build`: embedded too, and written out (about 100 MB) once into a private folder under
 *    the temp directory (TMPDIR; it must allow loading libraries, i.e. not be mounted noexec), named
 *    after a digest of these files and reused by every later start (and rebuild) with the same files;
 *  - `bun run build --assets-beside` (the container image): not embedded, but laid out by the build
 *    in dist/sku-search-assets/<digest>/ beside the executable and used from there; nothing is written.
 */
import { existsSync, lstatSync, mkdirSync, renameSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { installedNewDatabase } from "../adapters/pglite/new-database.ts";
import type { PgliteAssets } from "../adapters/pglite/pglite-client.ts";

export interface RuntimeAssets {
  pglite?: PgliteAssets;
  localModel?: LocalModelAssets;
}

/** What the offline model's worker needs in the executable (its options for LocalEmbedder). */
export interface LocalModelAssets {
  modelDir: string;
  /** onnxruntime-node's addon, written out or beside the executable. */
  onnxruntimeBinding: string;
  /** The worker's module inside the executable. */
  workerUrl: string;
}

/**
 * The executable's entry points, from src/: the build bundles each one, and the executable holds
 * them under its virtual root by these paths (relative to the entry points' common folder).
 */
export const ENTRY_POINTS = {
  main: "app/main.ts",
  localModelWorker: "adapters/providers/local-model-worker.ts",
} as const;

/** Files always embedded, by their name inside the executable; scripts/build.ts embeds exactly these. */
export const EMBEDDED = {
  pgliteWasm: "pglite.wasm",
  initdbWasm: "initdb.wasm",
  pgliteData: "pglite.data",
  /** PGlite's dumpDataDir of a database just made by initdb (scripts/build.ts makes it). */
  pgdataTemplate: "pgdata.tar.gz",
} as const;

/** Files opened by path, by their name inside the executable or the folder beside it. */
export const ON_DISK = {
  vectorBundle: "vector.tar.gz",
  trgmBundle: "pg_trgm.tar.gz",
  onnxruntimeBinding: "onnxruntime_binding.node",
  onnxruntimeLibrary: "libonnxruntime.so.1",
  /** A folder: the whole offline model. */
  model: "all-MiniLM-L6-v2",
} as const;

/** With `--assets-beside`, the folder beside the executable that holds ON_DISK, under the digest. */
export const BESIDE_FOLDER = "sku-search-assets";

/** Constants scripts/build.ts defines: a digest of the ON_DISK files, and whether they are beside. */
export const BUILD_CONSTANTS = {
  digest: "SKU_SEARCH_ASSETS_DIGEST",
  beside: "SKU_SEARCH_ASSETS_BESIDE",
} as const;
declare const SKU_SEARCH_ASSETS_DIGEST: string | undefined;
declare const SKU_SEARCH_ASSETS_BESIDE: boolean | undefined;

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
 * Outside the executable only the installed new database, when there is one.
 */
export async function resolveRuntimeAssets(
  needs: RuntimeAssetNeeds = { pglite: true, localModel: true },
): Promise<RuntimeAssets> {
  if (!Bun.isStandaloneExecutable) {
    const initialDataDir = needs.pglite ? installedNewDatabase() : undefined;
    return initialDataDir ? { pglite: { initialDataDir } } : {};
  }
  const [pglite, localModel] = await Promise.all([
    needs.pglite ? preparePglite() : undefined,
    needs.localModel ? prepareLocalModel() : undefined,
  ]);
  return { pglite, localModel };
}

function once<T>(prepare: () => Promise<T>): () => Promise<T> {
  let result: Promise<T> | undefined;
  return () => {
    result ??= prepare();
    return result;
  };
}

const preparePglite = once(async (): Promise<Required<PgliteAssets>> => {
  const folder = await onDisk([ON_DISK.vectorBundle, ON_DISK.trgmBundle]);
  const [pgliteWasmModule, initdbWasmModule] = await Promise.all([
    WebAssembly.compile(await embedded(EMBEDDED.pgliteWasm).arrayBuffer()),
    WebAssembly.compile(await embedded(EMBEDDED.initdbWasm).arrayBuffer()),
  ]);
  return {
    pgliteWasmModule,
    initdbWasmModule,
    fsBundle: embedded(EMBEDDED.pgliteData),
    initialDataDir: embedded(EMBEDDED.pgdataTemplate),
    vectorBundlePath: join(folder.path, ON_DISK.vectorBundle),
    trgmBundlePath: join(folder.path, ON_DISK.trgmBundle),
  };
});

const prepareLocalModel = once(async (): Promise<LocalModelAssets> => {
  const folder = await onDisk([ON_DISK.onnxruntimeBinding, ON_DISK.onnxruntimeLibrary, ON_DISK.model]);
  // The addon finds libonnxruntime.so.1 beside itself (its RUNPATH is $ORIGIN).
  const binding = join(folder.path, ON_DISK.onnxruntimeBinding);
  try {
    require(binding); // loaded now, so that a failure stops the start with its cause
  } catch (error) {
    const hint = folder.written ? " (if the temp folder is mounted noexec, set TMPDIR to one that is not)" : "";
    throw new Error(`cannot load onnxruntime from ${folder.path}: ${(error as Error).message}${hint}`);
  }
  return {
    modelDir: join(folder.path, ON_DISK.model),
    onnxruntimeBinding: binding,
    workerUrl: join(import.meta.dir, ENTRY_POINTS.localModelWorker),
  };
});

/** An embedded file, by its name inside the executable. */
function embedded(name: string): Blob {
  return Bun.file(join(import.meta.dir, name));
}

/**
 * The folder where these ON_DISK files (or folders) can be opened by path: the one the build laid
 * out beside the executable, or else the private folder under TMPDIR they are written out to.
 */
async function onDisk(names: readonly string[]): Promise<{ path: string; written: boolean }> {
  if (typeof SKU_SEARCH_ASSETS_DIGEST !== "string") {
    throw new Error("this executable was not built by `bun run build` (scripts/build.ts): its files are missing");
  }
  if (typeof SKU_SEARCH_ASSETS_BESIDE === "boolean" && SKU_SEARCH_ASSETS_BESIDE) {
    const path = join(dirname(process.execPath), BESIDE_FOLDER, SKU_SEARCH_ASSETS_DIGEST);
    const missing = names.filter((name) => !existsSync(join(path, name)));
    if (missing.length > 0) {
      throw new Error(
        `${path} lacks ${missing.join(", ")}: this executable was built with --assets-beside and uses ` +
          "the files its build laid out there (copy dist/ whole)",
      );
    }
    return { path, written: false };
  }
  const path = privateCacheDir(SKU_SEARCH_ASSETS_DIGEST);
  await writeOut(path, names);
  return { path, written: true };
}

/** A folder only this user can write (native code is loaded from it), one per set of ON_DISK files. */
function privateCacheDir(digest: string): string {
  const uid = process.getuid?.() ?? 0;
  const root = join(tmpdir(), `sku-search-${uid}`);
  mkdirSync(root, { recursive: true, mode: 0o700 });
  const stat = lstatSync(root);
  if (!stat.isDirectory() || stat.uid !== uid || (stat.mode & 0o077) !== 0) {
    throw new Error(`${root} must be a folder owned by user ${uid} that no one else can write (mode 700)`);
  }
  return join(root, digest);
}

/**
 * Copies embedded files (a folder's name stands for every file in it) into `dir` under the same
 * relative names, skipping those already there.
 */
async function writeOut(dir: string, names: readonly string[]): Promise<void> {
  const isIn = (file: string, name: string) => file === name || file.startsWith(`${name}/`);
  const files = Bun.embeddedFiles
    .map((file) => (file as File).name)
    .filter((file) => names.some((name) => isIn(file, name)));
  const absent = names.filter((name) => !files.some((file) => isIn(file, name)));
  if (absent.length > 0) throw new Error(`${absent.join(", ")} not embedded in this executable: rebuild it`);
  for (const name of files) {
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
