/**
 * The command line's own behaviour, in process (runCli with the output captured): help, versions and
 * usage errors. None of these opens a database or loads a model; the commands themselves run as real
 * processes in cli.test.ts.
 */
import { describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { runCli } from "../../src/app/cli.ts";
import { useTempDirs } from "../support/temp-dirs.ts";

const dataDir = useTempDirs("cli-usage");

async function cli(args: string[], env: Record<string, string> = {}) {
  let stdout = "";
  let stderr = "";
  const DATA_DIR = dataDir();
  const code = await runCli(args, { DATA_DIR, ...env }, "9.8.7", {
    out: (text) => {
      stdout += text;
    },
    err: (text) => {
      stderr += text;
    },
  });
  return { code, stdout, stderr, dataDir: DATA_DIR };
}

const EVERY_COMMAND = [
  "serve",
  "users add <username>",
  "users reset-password <username>",
  "users remove <username>",
  "users list",
  "import <file>",
  "export <file>",
  "reembed",
  "index status",
  "index build",
  "index drop",
  "healthcheck",
];

describe("help and version", () => {
  test("help, -h and --help list every command with its arguments; --version and -V print the version", async () => {
    for (const args of [["help"], ["--help"], ["-h"]]) {
      const help = await cli(args);
      expect({ args, code: help.code }).toEqual({ args, code: 0 });
      for (const command of EVERY_COMMAND) expect(help.stdout).toContain(command);
      expect(help.stdout).toContain("README.md");
      expect(existsSync(join(help.dataDir, "pgdata"))).toBe(false);
    }
    for (const args of [["--version"], ["-V"]]) {
      expect(await cli(args)).toMatchObject({ code: 0, stdout: "9.8.7\n" });
    }
  });

  test("--help after a command, or help before it, shows its usage and runs nothing", async () => {
    const cases: [string[], string][] = [
      [["reembed", "--help"], "Usage: sku-search reembed"],
      [["users", "add", "--help"], "Usage: sku-search users add [options] <username>"],
      [["help", "users", "remove"], "Usage: sku-search users remove [options] <username>"],
      [["import", "-h"], "--batch-size <n>"],
      [["help", "index", "build"], "VECTOR_INDEX_MIN_ROWS"],
    ];
    for (const [args, shown] of cases) {
      const result = await cli(args);
      expect({ args, code: result.code }).toEqual({ args, code: 0 });
      expect(result.stdout).toContain(shown);
      expect(existsSync(join(result.dataDir, "pgdata"))).toBe(false);
    }
  });

  test("settings are read only when a command runs: help works whatever they are", async () => {
    expect(await cli(["help"], { PORT: "eighty" })).toMatchObject({ code: 0 });
  });
});

describe("usage errors exit 2 and name what is wrong", () => {
  const cases: [string[], string[]][] = [
    [["frobnicate"], ["'frobnicate'"]],
    [["users", "promote", "bea"], ["'promote'"]],
    [["users"], ["users add", "users reset-password", "users remove"]],
    [["index"], ["index status", "index build", "index drop"]],
    [["users", "add", "bea", "--force"], ["--force"]],
    [["users", "add", "bea", "luis"], ["bea, luis"]],
    [["users", "add"], ["missing required argument 'username'"]],
    [["reembed", "now"], ["now"]],
    [["healthcheck", "--port=1"], ["--port"]],
    [["import"], ["missing required argument 'file'"]],
    [
      ["import", "products.jsonl", "--format", "xml"],
      ["--format", "'xml'"],
    ],
    [["import", "products.jsonl", "--batch-size", "0"], ["--batch-size"]],
  ];
  for (const [args, named] of cases) {
    test(args.join(" ") || "(none)", async () => {
      const result = await cli(args);
      expect(result).toMatchObject({ code: 2 });
      for (const text of named) expect(result.stderr).toContain(text);
      expect(result.stderr).toContain("sku-search help");
      expect(existsSync(join(result.dataDir, "pgdata"))).toBe(false);
    });
  }
});

test("a bad setting stops a command with a message naming each one (exit 1)", async () => {
  const result = await cli(["index", "status"], { PORT: "eighty", ALGORITHM: "none" });
  expect(result).toMatchObject({ code: 1 });
  expect(result.stderr).toContain("PORT");
  expect(result.stderr).toContain("ALGORITHM");
});
