/**
 * The operator's command line, run exactly as the README writes it (`bun run cli ...`, `bun start`)
 * as a real process on the embedded database, with passwords on standard input.
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import packageJson from "../../package.json" with { type: "json" };
import { LocalEmbedder } from "../../src/adapters/providers/local-embedder.ts";
import { INSTALLED_MODEL_DIR } from "../../src/adapters/providers/local-model-files.ts";
import { loadConfig } from "../../src/app/config.ts";
import { createContainer, openStore } from "../../src/app/container.ts";
import { createLogger } from "../../src/app/logger.ts";
import { CreateProduct } from "../../src/domain/create-product.ts";
import { FakeEmbedder } from "../fakes/fake-embedder.ts";
import { useTempDirs } from "../support/temp-dirs.ts";

// Every command boots PGlite in a new process.
setDefaultTimeout(120_000);

const PROJECT = join(import.meta.dir, "../..");
const dataDir = useTempDirs("cli");

/** `bun run cli <args>` in the project folder, as the README says. */
function cli(args: string[], env: Record<string, string>, stdin = "") {
  return run(["bun", "run", "cli", ...args], env, stdin);
}

async function run(command: string[], env: Record<string, string>, stdin = "") {
  const child = Bun.spawn(command, {
    cwd: PROJECT,
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: tmpdir(), ADMIN_PASSWORD: "admin-password", ...env },
    stdin: new Blob([stdin]),
    stdout: "pipe",
    stderr: "pipe",
  });
  const [stdout, stderr, code] = await Promise.all([
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
    child.exited,
  ]);
  return { code, stdout, stderr };
}

/** Logs in through the real app on the same data directory (the CLI process has exited). */
async function loginStatus(dir: string, username: string, password: string): Promise<number> {
  const config = loadConfig({ DATA_DIR: dir, ADMIN_PASSWORD: "admin-password" });
  const container = await createContainer(config, createLogger("error"), {
    embedder: new LocalEmbedder(INSTALLED_MODEL_DIR),
  });
  try {
    const response = await container.app.handle(
      new Request("http://localhost/auth/login", {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({ username, password }).toString(),
      }),
    );
    return response.status;
  } finally {
    await container.close();
  }
}

describe("users", () => {
  test("add, reset-password and remove, with the password read from stdin", async () => {
    const env = { DATA_DIR: dataDir() };
    const added = await cli(["users", "add", "bea"], env, "primera-clave\n");
    expect(added).toMatchObject({ code: 0 });
    expect(added.stdout).toContain("'bea' created");
    expect(`${added.stdout}${added.stderr}`).not.toContain("primera-clave");
    expect(await loginStatus(env.DATA_DIR, "bea", "primera-clave")).toBe(200);

    const again = await cli(["users", "add", "bea"], env, "otra-clave-mas\n");
    expect(again.code).toBe(1);
    expect(again.stderr).toContain("ya existe");

    expect((await cli(["users", "reset-password", "bea"], env, "segunda-clave\n")).code).toBe(0);
    expect(await loginStatus(env.DATA_DIR, "bea", "primera-clave")).toBe(401);
    expect(await loginStatus(env.DATA_DIR, "bea", "segunda-clave")).toBe(200);

    expect((await cli(["users", "remove", "bea"], env)).code).toBe(0);
    expect(await loginStatus(env.DATA_DIR, "bea", "segunda-clave")).toBe(401);
    const missing = await cli(["users", "remove", "bea"], env);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain("no existe");
  });

  test("refuses a short password", async () => {
    const short = await cli(["users", "add", "bea"], { DATA_DIR: dataDir() }, "corta\n");
    expect(short.code).toBe(1);
    expect(short.stderr).toContain("contraseña");
  });
});

describe("the command line itself", () => {
  test("help, -h and --help list every command; --version prints the version", async () => {
    const env = { DATA_DIR: dataDir() };
    for (const args of [["help"], ["--help"], ["-h"]]) {
      const help = await cli(args, env);
      expect(help.code).toBe(0);
      for (const command of ["serve", "users add", "users reset-password", "users remove", "reembed", "healthcheck"]) {
        expect(help.stdout).toContain(command);
      }
    }
    const version = await cli(["--version"], env);
    expect(version).toMatchObject({ code: 0, stdout: `${packageJson.version}\n` });
  });

  test("--help after a command shows its usage and runs nothing", async () => {
    const env = { DATA_DIR: dataDir() };
    const reembedHelp = await cli(["reembed", "--help"], env);
    expect(reembedHelp.code).toBe(0);
    expect(reembedHelp.stdout).toContain("Usage: sku-search reembed");
    expect(reembedHelp.stderr).not.toContain("re-embedded");
    const addHelp = await cli(["users", "add", "--help"], env);
    expect(addHelp.code).toBe(0);
    expect(addHelp.stdout).toContain("Usage: sku-search users add <username>");
    expect((await cli(["help", "users", "remove"], env)).stdout).toContain("Usage: sku-search users remove <username>");
    // Nothing ran: not even the embedded database was created.
    expect(existsSync(join(env.DATA_DIR, "pgdata"))).toBe(false);
  });

  test("unknown commands, options and extra arguments are usage errors (exit 2) that name them", async () => {
    const env = { DATA_DIR: dataDir() };
    const cases: [string[], string][] = [
      [["frobnicate"], "'frobnicate'"],
      [["users", "promote", "bea"], "'promote'"],
      [["users"], "add, reset-password, remove"],
      [["users", "add", "bea", "--force"], "--force"],
      [["users", "add", "bea", "luis"], "'luis'"],
      [["users", "add"], "missing argument"],
      [["reembed", "now"], "'now'"],
      [["healthcheck", "--port=1"], "--port"],
    ];
    for (const [args, named] of cases) {
      const result = await cli(args, env);
      expect({ args, code: result.code }).toEqual({ args, code: 2 });
      expect(result.stderr).toContain(named);
    }
    expect(existsSync(join(env.DATA_DIR, "pgdata"))).toBe(false);
  });
});

test("a bad setting stops the program with a message naming it", async () => {
  const result = await cli(["serve"], { DATA_DIR: dataDir(), PORT: "eighty", ALGORITHM: "none" });
  expect(result.code).toBe(1);
  expect(result.stderr).toContain("PORT");
  expect(result.stderr).toContain("ALGORITHM");
});

test("healthcheck fails, saying so, when nothing answers", async () => {
  const result = await cli(["healthcheck"], { DATA_DIR: dataDir(), PORT: "1" });
  expect(result.code).toBe(1);
  expect(result.stderr).toContain("nothing answers at http://127.0.0.1:1/");
});

test("reembed moves a catalogue to the configured model, after which the service starts", async () => {
  const dir = dataDir();
  const config = loadConfig({ DATA_DIR: dir });
  const oldModel = new FakeEmbedder(16);
  const store = await openStore(config, oldModel);
  const create = new CreateProduct({ products: store.products, embedder: oldModel });
  await create.execute({ name: "Espresso machine", description: "15-bar pump, milk frother", category: "Kitchen" });
  await create.execute({ name: "Leather wallet", description: "Slim bifold, card slots", category: "Accessories" });
  await store.client.close();

  const refused = await cli(["serve"], { DATA_DIR: dir });
  expect(refused.code).toBe(1);
  expect(refused.stderr).toContain("reembed");

  const rebuilt = await cli(["reembed"], { DATA_DIR: dir });
  expect(rebuilt.code).toBe(0);
  expect(rebuilt.stderr).toContain("all 2 products now use all-MiniLM-L6-v2 (384 dimensions)");

  const local = new LocalEmbedder(INSTALLED_MODEL_DIR);
  const reopened = await openStore(config, local);
  try {
    const [query] = await local.embed(["a coffee maker"], "query");
    const results = await reopened.products.searchByVector(query ?? [], { limit: 2 });
    expect(results.map((product) => product.name)).toEqual(["Espresso machine", "Leather wallet"]);
  } finally {
    await reopened.client.close();
  }
});

test("serve answers, guards its data directory from a second process, and stops cleanly on SIGTERM", async () => {
  const env = {
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    HOME: tmpdir(),
    DATA_DIR: dataDir(),
    ADMIN_PASSWORD: "admin-password",
    HOST: "127.0.0.1",
    PORT: String(20000 + Math.floor(Math.random() * 20000)),
    LOG_LEVEL: "warn",
  };
  const server = Bun.spawn(["bun", "start"], { cwd: PROJECT, env, stdout: "pipe", stderr: "pipe" });
  try {
    let healthy = 1;
    for (let attempt = 0; attempt < 60 && healthy !== 0; attempt++) {
      await Bun.sleep(500);
      healthy = (await cli(["healthcheck"], env)).code;
    }
    expect(healthy).toBe(0);

    const second = await cli(["users", "add", "bea"], env, "primera-clave\n");
    expect(second.code).toBe(1);
    expect(second.stderr).toContain("in use by process");
  } finally {
    server.kill("SIGTERM");
  }
  expect(await server.exited).toBe(0);
  expect((await cli(["users", "add", "bea"], { DATA_DIR: env.DATA_DIR }, "primera-clave\n")).code).toBe(0);
});

test("serve on a busy port fails, and leaves the data directory free", async () => {
  const env = { DATA_DIR: dataDir() };
  const busy = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  try {
    const result = await cli(["serve"], { ...env, HOST: "127.0.0.1", PORT: String(busy.port) });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(String(busy.port));
  } finally {
    busy.stop(true);
  }
  expect((await cli(["users", "add", "bea"], env, "primera-clave\n")).code).toBe(0);
});
