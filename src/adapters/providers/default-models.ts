/**
 * Each provider's default models and options, apart from its adapter so that reading the settings
 * (config.ts) does not load the provider's SDK: a command that never calls a provider never loads one.
 */
export const OPENAI_DEFAULT_EMBEDDING_MODEL = "text-embedding-3-large";
export const OPENAI_DEFAULT_GENERATION_MODEL = "gpt-4.1-mini";
export const ANTHROPIC_DEFAULT_GENERATION_MODEL = "claude-haiku-4-5";
export const GOOGLE_DEFAULT_EMBEDDING_MODEL = "gemini-embedding-001";
export const GOOGLE_DEFAULT_GENERATION_MODEL = "gemini-2.5-flash-lite";

/**
 * How the OpenAI embedder's vectors travel: `base64` (what OpenAI's SDK asks for by default; a
 * server that ignores it and answers numbers is read alike) or `float` (JSON numbers, for a
 * compatible server that refuses base64). A 3072-d vector is about 16 kB in base64 against 60 kB of
 * JSON numbers, and parsing the numbers took 39 % of the service's CPU samples during a bulk import
 * (bench/scale.ts --profile). The base64 is decoded by the adapter (openai.ts), not by the SDK: its
 * `Array.from` of each Float32Array then took a third of the samples (60 to 80 µs a 3072-d vector
 * against 4 to 5 µs for a plain loop, in Bun).
 */
export const OPENAI_EMBEDDING_ENCODINGS = ["base64", "float"] as const;
export type OpenAIEmbeddingEncoding = (typeof OPENAI_EMBEDDING_ENCODINGS)[number];
