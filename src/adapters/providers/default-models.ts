/**
 * Each provider's default models, apart from its adapter so that reading the settings (config.ts)
 * does not load the provider's SDK: a command that never calls a provider never loads one.
 */
export const OPENAI_DEFAULT_EMBEDDING_MODEL = "text-embedding-3-large";
export const OPENAI_DEFAULT_GENERATION_MODEL = "gpt-4.1-mini";
export const ANTHROPIC_DEFAULT_GENERATION_MODEL = "claude-haiku-4-5";
export const GOOGLE_DEFAULT_EMBEDDING_MODEL = "gemini-embedding-001";
export const GOOGLE_DEFAULT_GENERATION_MODEL = "gemini-2.5-flash-lite";
