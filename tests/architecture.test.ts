/**
 * The house's rules, checked over every import in src/ (static, type-only and dynamic), so that a
 * wrong arrow fails the suite instead of waiting for a review:
 * - src/domain imports only src/domain and src/ports: no adapter, no framework, no npm package;
 * - src/ports imports only src/domain and src/ports;
 * - src/lib (small helpers shared by adapters) imports only src/lib;
 * - an adapter folder (src/adapters/<name>/) imports the domain, the ports, src/lib and npm packages,
 *   never src/app and never another adapter folder, except the few public modules listed below.
 */
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";

const ROOT = join(import.meta.dir, "..");
const SRC = join(ROOT, "src");

/** Modules of one adapter folder that another may use, and why. */
const PUBLIC_ACROSS_ADAPTERS: Record<string, { from: string; why: string }[]> = {
  "postgres/sql-client.ts": [
    { from: "pglite", why: "the embedded database runs the same SQL: it implements the postgres adapter's SqlClient" },
  ],
};

interface Import {
  file: string;
  specifier: string;
  /** The imported file, relative to src/ (undefined for a package or a builtin). */
  target: string | undefined;
}

/**
 * `import ... from`, `import type ... from`, `export ... from`, `import "x"` and `import("x")`.
 * (Bun's transpiler would drop type-only imports, which break the rules as much as any.)
 */
const IMPORT =
  /^\s*(?:import|export)\s[^;]*?\sfrom\s*["']([^"']+)["']|^\s*import\s*["']([^"']+)["']|\bimport\(\s*["']([^"']+)["']\s*\)/gm;

function importsOf(file: string): Import[] {
  const source = readFileSync(file, "utf8");
  return [...source.matchAll(IMPORT)].map((match) => {
    const specifier = (match[1] ?? match[2] ?? match[3]) as string;
    return {
      file: relative(SRC, file),
      specifier,
      target: specifier.startsWith(".") ? relative(SRC, resolve(dirname(file), specifier)) : undefined,
    };
  });
}

/** Every rule an import breaks (empty when it keeps them all). */
export function violations(imports: readonly Import[]): string[] {
  const broken: string[] = [];
  for (const { file, specifier, target } of imports) {
    const [layer, folder] = file.split("/");
    const targetLayer = target?.split("/")[0];
    const say = (rule: string) => broken.push(`${file} imports ${specifier}: ${rule}`);
    if (layer === "domain" || layer === "ports") {
      if (target === undefined) say(`src/${layer} imports no package or builtin (keep I/O and frameworks in adapters)`);
      else if (targetLayer !== "domain" && targetLayer !== "ports")
        say(`src/${layer} imports only src/domain and src/ports`);
    } else if (layer === "lib") {
      if (target !== undefined && targetLayer !== "lib") say("src/lib imports only src/lib");
    } else if (layer === "adapters" && target !== undefined) {
      if (targetLayer === "app")
        say("an adapter never imports src/app (the composition root wires adapters, not the reverse)");
      if (targetLayer === "adapters") {
        const targetFolder = target.split("/")[1];
        const inside = target.split("/").slice(1).join("/");
        const allowed = PUBLIC_ACROSS_ADAPTERS[inside]?.some((entry) => entry.from === folder);
        if (targetFolder !== folder && !allowed) {
          say(`adapters/${folder} imports adapters/${targetFolder}'s internals (share through src/ports or src/lib)`);
        }
      }
    }
  }
  return broken;
}

const SOURCES = [...new Bun.Glob("**/*.{ts,tsx}").scanSync(SRC)].filter((file) => !file.endsWith(".d.ts"));

describe("the house's import rules", () => {
  test("every import in src/ keeps them", () => {
    const imports = SOURCES.flatMap((file) => importsOf(join(SRC, file)));
    expect(imports.length).toBeGreaterThan(400);
    expect(violations(imports)).toEqual([]);
  });

  test("each rule refuses the wrong arrow it is for", () => {
    const wrong = (file: string, specifier: string, target?: string): Import => ({ file, specifier, target });
    expect(
      violations([
        wrong("domain/search-and-recommend.ts", "../adapters/postgres/schema.ts", "adapters/postgres/schema.ts"),
        wrong("domain/product.ts", "elysia"),
        wrong("ports/embedder.ts", "../app/config.ts", "app/config.ts"),
        wrong("lib/lru-cache.ts", "../domain/text.ts", "domain/text.ts"),
        wrong("adapters/import/file-items.ts", "../http/body.ts", "adapters/http/body.ts"),
        wrong("adapters/http/app.ts", "../../app/config.ts", "app/config.ts"),
        wrong("adapters/http/app.ts", "../postgres/sql-client.ts", "adapters/postgres/sql-client.ts"),
      ]).map((line) => line.split(":")[0]),
    ).toEqual([
      "domain/search-and-recommend.ts imports ../adapters/postgres/schema.ts",
      "domain/product.ts imports elysia",
      "ports/embedder.ts imports ../app/config.ts",
      "lib/lru-cache.ts imports ../domain/text.ts",
      "adapters/import/file-items.ts imports ../http/body.ts",
      "adapters/http/app.ts imports ../../app/config.ts",
      "adapters/http/app.ts imports ../postgres/sql-client.ts",
    ]);
    // The listed exception, and an adapter's own folder, pass.
    expect(
      violations([
        wrong("adapters/pglite/pglite-client.ts", "../postgres/sql-client.ts", "adapters/postgres/sql-client.ts"),
        wrong("adapters/postgres/schema.ts", "./sql-client.ts", "adapters/postgres/sql-client.ts"),
        wrong("adapters/http/app.ts", "elysia"),
      ]),
    ).toEqual([]);
  });
});
