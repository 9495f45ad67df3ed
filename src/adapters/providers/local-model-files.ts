/**
 * The offline embedding model's files: what scripts/install-model.ts installs and LocalEmbedder
 * reads. This module imports nothing of the project, so the installer needs only it (the container
 * image installs the model in a layer that the rest of the sources do not invalidate).
 */
import { resolve } from "node:path";

export const LOCAL_EMBEDDING_MODEL = "all-MiniLM-L6-v2";

/** Where `bun install` (scripts/install-model.ts) puts the model, in the project's own folder. */
export const INSTALLED_MODEL_DIR = resolve(import.meta.dir, "../../../models", LOCAL_EMBEDDING_MODEL);

/** What scripts/install-model.ts puts in the model folder and the q4 pipeline reads. */
export const LOCAL_MODEL_FILES = [
  "config.json",
  "tokenizer.json",
  "tokenizer_config.json",
  "onnx/model_q4.onnx",
  "onnx/model_q4.onnx_data",
];

/**
 * The compiled executable's copy of onnxruntime-node requires its addon from the path in this global
 * (scripts/build.ts rewrites its require; src/app/runtime-assets.ts says where the addon is). Each
 * thread has its own globals: LocalModel sets it on the thread it runs on.
 */
export const ONNXRUNTIME_BINDING_GLOBAL = "__skuSearchOnnxruntimeBinding";
