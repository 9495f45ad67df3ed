/**
 * The operator's command line on the embedded database, with passwords on standard input. Each
 * command the README gives runs once as the README writes it (`bun run cli ...`, `bun start`), as a
 * real process: most of them against a running service, which they reach over its admin socket;
 * every other run of a command (its refusals, the same command without a service) is in process
 * (tests/support/cli.ts). The tests run concurrently, each on its own DATA_DIR.
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { existsSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import packageJson from "../../package.json" with { type: "json" };
import { freePort } from "../../scripts/free-port.ts";
import { LocalEmbedder } from "../../src/adapters/providers/local-embedder.ts";
import { INSTALLED_MODEL_DIR } from "../../src/adapters/providers/local-model-files.ts";
import { CompositionRoot } from "../../src/app/composition-root.ts";
import { loadConfig } from "../../src/app/config.ts";
import { createHttpService } from "../../src/app/http-service.ts";
import { createLogger } from "../../src/app/logger.ts";
import { CreateProduct } from "../../src/domain/create-product.ts";
import { contentDigest } from "../../src/domain/product.ts";
import type { EmbeddingSpace } from "../../src/ports/embedding-space.ts";
import { FakeEmbedder } from "../fakes/fake-embedder.ts";
import { cliInProcess, cliProcess, PROJECT } from "../support/cli.ts";
import { withDatabaseMigratedFor, withMigratedDatabase } from "../support/new-database.ts";
import { lowCostHasher } from "../support/password-hasher.ts";
import { useTempDirs } from "../support/temp-dirs.ts";

// Processes and embedded databases queued behind each other on 2 busy cores.
setDefaultTimeout(300_000);

/** An empty DATA_DIR, as on a first start. */
const dataDir = useTempDirs("cli", { concurrent: true });
/**
 * A DATA_DIR holding an embedded database migrated for `space` (the offline model's unless told),
 * so no command waits for initdb or for the migrations: a first start is what the README's runs as
 * processes, on an empty DATA_DIR, are for.
 */
const dataDirWithDatabase = (space?: EmbeddingSpace) =>
  space ? withMigratedDatabase(dataDir(), space) : withDatabaseMigratedFor(dataDir(), {});

const ADMIN_PASSWORD = "admin-password";

/** `bun run cli <args>` in the project folder, as the README writes it. */
function cli(args: string[], env: Record<string, string>, stdin = "") {
  return cliProcess(args, { ADMIN_PASSWORD, ...env }, stdin);
}

/** The same command run in this process. */
function inProcess(args: string[], env: Record<string, string>, stdin = "") {
  return cliInProcess(args, { ADMIN_PASSWORD, ...env }, stdin);
}

/** Whether anything answers 200 at `url`. */
async function answers(url: string): Promise<boolean> {
  try {
    return (await fetch(url, { signal: AbortSignal.timeout(2000) })).status === 200;
  } catch {
    return false;
  }
}

/**
 * The status of a login with each of `credentials`, through the real app on the same data
 * directory (opened once for all of them, then closed: the next command needs the directory).
 */
async function loginStatuses(dir: string, credentials: [username: string, password: string][]): Promise<number[]> {
  // Logging in embeds nothing, so no Apertium pipeline is started for it.
  const config = loadConfig({ DATA_DIR: dir, ADMIN_PASSWORD, QUERY_TRANSLATION: "off" });
  // Hashes made here (the admin's) cost little; the users' were made by the CLI at the service's cost.
  const container = await createHttpService(config, createLogger("error"), {
    embedder: new LocalEmbedder(INSTALLED_MODEL_DIR),
    passwordHasher: lowCostHasher(),
  });
  try {
    const statuses: number[] = [];
    for (const [username, password] of credentials) {
      const response = await container.app.handle(
        new Request("http://localhost/auth/login", {
          method: "POST",
          headers: { "content-type": "application/x-www-form-urlencoded" },
          body: new URLSearchParams({ username, password }).toString(),
        }),
      );
      statuses.push(response.status);
    }
    return statuses;
  } finally {
    await container.close();
  }
}

describe.concurrent("users, with no service running (the commands as processes: the service test below)", () => {
  test("add, reset-password, set-role, list and remove, with the password read from stdin", async () => {
    const env = { DATA_DIR: await dataDirWithDatabase() };
    const added = await inProcess(["users", "add", "bea"], env, "primera-clave\n");
    expect(added).toMatchObject({ code: 0, stdout: "user 'bea' created (viewer)\n" });
    expect(`${added.stdout}${added.stderr}`).not.toContain("primera-clave");
    expect(await loginStatuses(env.DATA_DIR, [["bea", "primera-clave"]])).toEqual([200]);

    const again = await inProcess(["users", "add", "bea"], env, "otra-clave-mas\n");
    expect(again).toMatchObject({ code: 1 });
    expect(again.stderr).toContain("ya existe");

    expect(await inProcess(["users", "reset-password", "bea"], env, "segunda-clave\n")).toMatchObject({ code: 0 });
    expect(
      await loginStatuses(env.DATA_DIR, [
        ["bea", "primera-clave"],
        ["bea", "segunda-clave"],
      ]),
    ).toEqual([401, 200]);

    expect(await inProcess(["users", "set-role", "bea", "admin"], env)).toMatchObject({
      code: 0,
      stdout: "'bea' is now admin\n",
    });
    const listed = await inProcess(["users", "list"], env);
    expect(listed).toMatchObject({ code: 0 });
    expect(
      listed.stdout
        .trim()
        .split("\n")
        .map((line) => JSON.parse(line))
        .map(({ username, role }) => ({ username, role })),
    ).toEqual([{ username: "bea", role: "admin" }]);

    expect(await inProcess(["users", "remove", "bea"], env)).toMatchObject({ code: 0 });
    expect(await loginStatuses(env.DATA_DIR, [["bea", "segunda-clave"]])).toEqual([401]);
    const missing = await inProcess(["users", "remove", "bea"], env);
    expect(missing).toMatchObject({ code: 1 });
    expect(missing.stderr).toContain("no existe");
  });

  test("refuses a short password", async () => {
    const short = await inProcess(["users", "add", "bea"], { DATA_DIR: await dataDirWithDatabase() }, "corta\n");
    expect(short).toMatchObject({ code: 1 });
    expect(short.stderr).toContain("contraseña");
  });
});

test.concurrent("synonyms: set from a file (one set a line, or JSON on stdin), get as JSON, per catalogue", async () => {
  const env = { DATA_DIR: await dataDirWithDatabase() };
  const file = join(env.DATA_DIR, "synonyms.txt");
  await Bun.write(file, "# the shop's words\ncelular, móvil , smartphone\n\ntv,televisor\n");
  const set = await inProcess(["synonyms", "set", file], env);
  expect(set).toMatchObject({ code: 0, stdout: "2 synonym sets stored for catalogue 'default'\n" });
  // A catalogue that does not exist has no synonyms to set or read.
  for (const args of [
    ["synonyms", "get", "--catalogue", "muebles"],
    ["synonyms", "set", file, "--catalogue", "muebles"],
  ]) {
    const missing = await inProcess(args, env);
    expect({ args, code: missing.code }).toEqual({ args, code: 1 });
    expect(missing.stderr).toContain("No existe el catálogo");
  }
  expect(await inProcess(["catalogues", "add", "muebles"], env)).toMatchObject({ code: 0 });
  const other = await inProcess(
    ["synonyms", "set", "-", "--catalogue", "muebles"],
    env,
    '{"synonyms": [["sofá", "sillón"]]}',
  );
  expect(other).toMatchObject({ code: 0 });
  const got = await inProcess(["synonyms", "get"], env);
  expect(JSON.parse(got.stdout)).toEqual({
    synonyms: [
      ["celular", "móvil", "smartphone"],
      ["tv", "televisor"],
    ],
  });
  expect(JSON.parse((await inProcess(["synonyms", "get", "--catalogue", "muebles"], env)).stdout)).toEqual({
    synonyms: [["sofá", "sillón"]],
  });
  const bad = await inProcess(["synonyms", "set", "-"], env, "solo\n");
  expect(bad).toMatchObject({ code: 1 });
  expect(bad.stderr).toContain("El grupo de sinónimos 0");
});

test.concurrent("`bun run cli help` and `--version` work as the README writes them (the rest of the usage: cli-usage.test.ts)", async () => {
  const env = { DATA_DIR: dataDir() };
  const [help, version] = await Promise.all([cli(["help"], env), cli(["--version"], env)]);
  expect(help).toMatchObject({ code: 0 });
  for (const command of ["serve", "users add", "import <file>", "reembed", "index status", "healthcheck"]) {
    expect(help.stdout).toContain(command);
  }
  expect(version).toMatchObject({ code: 0, stdout: `${packageJson.version}\n` });
  expect(existsSync(join(env.DATA_DIR, "pgdata"))).toBe(false);
});

test.concurrent("a bad setting stops the program with a message naming it", async () => {
  const result = await inProcess(["serve"], { DATA_DIR: dataDir(), PORT: "eighty", ALGORITHM: "none" });
  expect(result).toMatchObject({ code: 1 });
  expect(result.stderr).toContain("PORT");
  expect(result.stderr).toContain("ALGORITHM");
});

test.concurrent("healthcheck fails, saying so, when nothing answers", async () => {
  const result = await inProcess(["healthcheck"], { DATA_DIR: dataDir(), PORT: "1" });
  expect(result).toMatchObject({ code: 1 });
  expect(result.stderr).toContain("nothing answers at http://127.0.0.1:1/");
});

test.concurrent("reembed moves a catalogue to the configured model, after which the service starts", async () => {
  const oldModel = new FakeEmbedder(16);
  const dir = await dataDirWithDatabase(oldModel);
  const config = loadConfig({ DATA_DIR: dir });
  const old = new CompositionRoot(config, createLogger("error"), { overrides: { embedder: oldModel } });
  const create = new CreateProduct({ products: await old.products(), embedder: oldModel });
  const into = { catalogue: "default" };
  await create.execute(
    { name: "Espresso machine", description: "15-bar pump, milk frother", category: "Kitchen" },
    into,
  );
  await create.execute(
    { name: "Leather wallet", description: "Slim bifold, card slots", category: "Accessories" },
    into,
  );
  await old.close();

  const refused = await inProcess(["serve"], { DATA_DIR: dir });
  expect(refused).toMatchObject({ code: 1 });
  expect(refused.stderr).toContain("reembed");

  const rebuilt = await cli(["reembed"], { DATA_DIR: dir });
  expect(rebuilt).toMatchObject({ code: 0 });
  expect(rebuilt.stderr).toContain("all 2 products now use all-MiniLM-L6-v2 (384 dimensions)");

  const local = new LocalEmbedder(INSTALLED_MODEL_DIR);
  const reopened = new CompositionRoot(config, createLogger("error"), { overrides: { embedder: local } });
  try {
    const [query] = await local.embed(["a coffee maker"], "query");
    const results = await (await reopened.products()).in("default").searchByVector(query ?? [], { limit: 2 });
    expect(results.map((product) => product.name)).toEqual(["Espresso machine", "Leather wallet"]);
  } finally {
    await reopened.close();
  }
});

test.concurrent("catalogues set chooses the attributes embedded; reembed --catalogue embeds the stale products again, once (no service running)", async () => {
  const env = { DATA_DIR: await dataDirWithDatabase(), QUERY_TRANSLATION: "off" };
  const file = join(env.DATA_DIR, "shoes.jsonl");
  const shoes = [
    { name: "Running shoe", description: "Light", category: "Sport", sku: "Z-1", attributes: { brand: "Acme" } },
    { name: "Trail shoe", description: "Grippy", category: "Sport", sku: "Z-2", attributes: { brand: "Zeta" } },
    { name: "Sock", description: "Wool", category: "Sport", sku: "S-1", attributes: { price: 3 } },
  ];
  await Bun.write(file, shoes.map((shoe) => JSON.stringify(shoe)).join("\n"));
  expect(await inProcess(["import", file], env)).toMatchObject({ code: 0 });

  const set = await inProcess(["catalogues", "set", "default", "--embedded-attributes", "brand, color"], env);
  expect(set).toMatchObject({ code: 0 });
  expect(JSON.parse(set.stdout)).toMatchObject({
    name: "default",
    products: 3,
    embedded_attributes: ["brand", "color"],
    stale_embeddings: 2,
  });
  const listed = JSON.parse((await inProcess(["catalogues", "list"], env)).stdout.trim());
  expect(listed).toMatchObject({ name: "default", embedded_attributes: ["brand", "color"] });
  const bad = await inProcess(["catalogues", "set", "default", "--embedded-attributes", "Marca"], env);
  expect(bad).toMatchObject({ code: 1 });
  expect(bad.stderr).toContain("'Marca'");

  const first = await inProcess(["reembed", "--catalogue", "default"], env);
  expect(first).toMatchObject({ code: 0 });
  expect(first.stderr).toContain("catalogue 'default': 2 of 3 products embedded again from their current text");
  const second = await inProcess(["reembed", "--catalogue", "default"], env);
  expect(second.stderr).toContain("catalogue 'default': 0 of 3 products embedded again");
  const missing = await inProcess(["reembed", "--catalogue", "nunca"], env);
  expect(missing).toMatchObject({ code: 1 });
  expect(missing.stderr).toContain("No existe el catálogo 'nunca'");

  // Each product's digest is now that of its text with its brand (the vector was made from it).
  const local = new LocalEmbedder(INSTALLED_MODEL_DIR);
  const root = new CompositionRoot(loadConfig(env), createLogger("error"), { overrides: { embedder: local } });
  try {
    const stored = await (await root.products()).in("default").storedAfter(0, 10);
    for (const product of stored) {
      expect(product.contentDigest).toBe(await contentDigest(product, ["brand", "color"]));
    }
    expect(stored.map((product) => product.sku)).toEqual(["Z-1", "Z-2", "S-1"]);
  } finally {
    await root.close();
  }
});

test.concurrent("serve answers, guards its data directory, runs the README's users, keys, catalogues, synonyms, import, export and reembed --catalogue commands for the CLI over its admin socket, and stops cleanly on SIGTERM", async () => {
  // An empty DATA_DIR: the first start makes its database, as `bun start` does on a fresh checkout.
  const env = {
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    HOME: tmpdir(),
    DATA_DIR: dataDir(),
    ADMIN_PASSWORD,
    HOST: "127.0.0.1",
    PORT: String(await freePort()),
    LOG_LEVEL: "warn",
  };
  const server = Bun.spawn(["bun", "start"], { cwd: PROJECT, env, stdout: "pipe", stderr: "pipe" });
  const socket = join(env.DATA_DIR, "admin.sock");
  const base = `http://127.0.0.1:${env.PORT}`;
  const login = async (username: string, password: string) =>
    fetch(`${base}/auth/login`, { method: "POST", body: new URLSearchParams({ username, password }) });
  const bearer = async (username: string, password: string) => ({
    authorization: `Bearer ${((await (await login(username, password)).json()) as { access_token: string }).access_token}`,
  });
  try {
    // Waits (up to 60 s) for the service to answer, then asks the healthcheck command.
    for (let waited = 0; waited < 60_000 && !(await answers(`${base}/`)); waited += 100) await Bun.sleep(100);
    expect(await cli(["healthcheck"], env)).toMatchObject({ code: 0 });
    // Only the data directory's owner may reach the service's admin operations.
    expect(statSync(socket).mode & 0o777).toBe(0o600);

    // The database is the service's: users and keys go through it, the rest says the directory is in use.
    const added = await cli(["users", "add", "bea", "--role", "viewer"], env, "primera-clave\n");
    expect(added).toMatchObject({ code: 0, stdout: "user 'bea' created (viewer)\n" });
    expect(`${added.stdout}${added.stderr}`).not.toContain("primera-clave");
    const again = await inProcess(["users", "add", "bea"], env, "otra-clave-mas\n");
    expect(again).toMatchObject({ code: 1 });
    expect(again.stderr).toContain("ya existe");
    const listed = await cli(["users", "list"], env);
    expect(
      listed.stdout
        .trim()
        .split("\n")
        .map((line) => JSON.parse(line)),
    ).toEqual([
      { username: "admin", role: "admin", created_at: expect.any(String) },
      { username: "bea", role: "viewer", created_at: expect.any(String) },
    ]);
    const viewer = await bearer("bea", "primera-clave");
    expect((await fetch(`${base}/products`, { headers: viewer })).status).toBe(200);
    expect((await fetch(`${base}/keys`, { headers: viewer })).status).toBe(403);

    const reset = await cli(["users", "reset-password", "bea"], env, "segunda-clave\n");
    expect(reset).toMatchObject({ code: 0, stdout: "password of 'bea' changed\n" });
    expect((await login("bea", "primera-clave")).status).toBe(401);
    expect((await cli(["users", "set-role", "bea", "admin"], env)).stdout).toBe("'bea' is now admin\n");
    expect((await fetch(`${base}/keys`, { headers: await bearer("bea", "segunda-clave") })).status).toBe(200);

    const made = await cli(["keys", "add", "Tienda", "--actions", "search,products.read"], env);
    expect(made).toMatchObject({ code: 0 });
    const key = JSON.parse(made.stdout);
    expect(key).toMatchObject({ name: "Tienda", actions: ["search", "products.read"], catalogues: ["default"] });
    expect((await fetch(`${base}/products`, { headers: { "x-api-key": key.key } })).status).toBe(200);
    const keys = await cli(["keys", "list"], env);
    expect(keys.stdout).not.toContain(key.key);
    expect(JSON.parse(keys.stdout)).toMatchObject({ id: key.id, prefix: key.prefix });
    expect(await cli(["keys", "revoke", key.id], env)).toMatchObject({ code: 0 });
    expect((await fetch(`${base}/products`, { headers: { "x-api-key": key.key } })).status).toBe(401);
    const unknown = await inProcess(["keys", "revoke", key.id], env);
    expect(unknown).toMatchObject({ code: 1 });
    expect(unknown.stderr).toContain("No existe ninguna clave");

    // Catalogues, made and removed while the service runs: it serves them at once.
    const catalogue = await cli(["catalogues", "add", "tienda-norte"], env);
    expect(catalogue).toMatchObject({ code: 0 });
    expect(JSON.parse(catalogue.stdout)).toMatchObject({ name: "tienda-norte", products: 0 });
    expect((await inProcess(["catalogues", "add", "tienda-norte"], env)).stderr).toContain("Ya existe el catálogo");
    const admin = await bearer("admin", ADMIN_PASSWORD);
    const created = await fetch(`${base}/catalogues/tienda-norte/products/`, {
      method: "POST",
      headers: { ...admin, "content-type": "application/json" },
      body: JSON.stringify({
        name: "Cafetera",
        description: "Italiana",
        category: "Cocina",
        attributes: { brand: "Bialetti" },
      }),
    });
    expect(created.status).toBe(201);
    const catalogues = (await cli(["catalogues", "list"], env)).stdout
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line));
    expect(catalogues.map(({ name, products }) => ({ name, products }))).toEqual([
      { name: "default", products: 0 },
      { name: "tienda-norte", products: 1 },
    ]);

    const set = await cli(["catalogues", "set", "tienda-norte", "--embedded-attributes", "brand"], env);
    expect(JSON.parse(set.stdout)).toMatchObject({ embedded_attributes: ["brand"], stale_embeddings: 1 });
    // The service embeds the stale product again for the command (it holds the database), once.
    const reembedded = await cli(["reembed", "--catalogue", "tienda-norte"], env);
    expect(reembedded).toMatchObject({ code: 0 });
    expect(reembedded.stderr).toContain("catalogue 'tienda-norte': 1 of 1 products embedded again");
    expect((await inProcess(["reembed", "--catalogue", "tienda-norte"], env)).stderr).toContain("0 of 1 products");
    const unknownCatalogue = await inProcess(["reembed", "--catalogue", "nunca"], env);
    expect(unknownCatalogue).toMatchObject({ code: 1 });
    expect(unknownCatalogue.stderr).toContain("No existe el catálogo 'nunca'");

    // Synonyms, set from a file and read back while the service holds the database.
    const synonyms = join(env.DATA_DIR, "synonyms.txt");
    await Bun.write(synonyms, "celular, móvil\n");
    expect((await cli(["synonyms", "set", synonyms, "--catalogue", "tienda-norte"], env)).stdout).toBe(
      "1 synonym sets stored for catalogue 'tienda-norte'\n",
    );
    expect(JSON.parse((await cli(["synonyms", "get", "--catalogue", "tienda-norte"], env)).stdout)).toEqual({
      synonyms: [["celular", "móvil"]],
    });

    expect((await inProcess(["catalogues", "remove", "default"], env)).stderr).toContain("no se puede borrar");
    expect(await cli(["catalogues", "remove", "tienda-norte"], env)).toMatchObject({ code: 0 });
    expect((await fetch(`${base}/catalogues/tienda-norte/products`, { headers: admin })).status).toBe(404);

    expect((await cli(["users", "remove", "bea"], env)).stdout).toBe("user 'bea' removed\n");
    expect((await login("bea", "segunda-clave")).status).toBe(401);

    // An import while it runs: the command reads the file, the service stores it, item by item.
    const file = join(env.DATA_DIR, "cocina.jsonl");
    const items = [
      { name: "Tetera de hierro", description: "Hierro fundido", category: "Cocina", sku: "T-1" },
      { name: "Taza de cerámica", description: "Esmaltada", category: "Cocina", sku: "T-2" },
      { description: "Sin nombre", category: "Cocina", sku: "T-3" },
    ];
    await Bun.write(file, items.map((item) => JSON.stringify(item)).join("\n"));
    const imported = await cli(["import", file], env);
    expect(imported).toMatchObject({ code: 1 }); // one item failed
    expect(imported.stderr).toContain("the running service holds the embedded database");
    expect(imported.stderr).toContain("item 2: Campo 'name': es obligatorio");
    expect(JSON.parse(imported.stdout.trim().split("\n").at(-1) ?? "")).toMatchObject({
      event: "import_done",
      created: 2,
      failed: 1,
    });
    const stored = (await (await fetch(`${base}/products?limit=10`, { headers: admin })).json()) as {
      items: { sku: string }[];
    };
    expect(stored.items.map((product) => product.sku).sort()).toEqual(["T-1", "T-2"]);
    const reimported = await inProcess(["import", file], env);
    expect(JSON.parse(reimported.stdout.trim().split("\n").at(-1) ?? "")).toMatchObject({ unchanged: 2, failed: 1 });

    // An export while it runs: the service answers the pages, the command writes the file.
    const exportFile = join(env.DATA_DIR, "x.jsonl");
    const export_ = await cli(["export", exportFile, "--with-embeddings"], env);
    expect(export_).toMatchObject({ code: 0 });
    expect(JSON.parse(export_.stdout.trim())).toMatchObject({ event: "export_done", products: 2, embeddings: true });
    const lines = (await Bun.file(exportFile).text())
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line));
    expect(lines[0]).toMatchObject({ model: "all-MiniLM-L6-v2", dimension: 384, embeddings: true });
    expect(lines.slice(1).map((line) => [line.sku, line.embedding.length])).toEqual([
      ["T-1", 384],
      ["T-2", 384],
    ]);
    // What the service does not do for a command says the directory is in use.
    const whole = await inProcess(["reembed"], env);
    expect(whole).toMatchObject({ code: 1 });
    expect(whole.stderr).toContain("in use by process");
  } finally {
    server.kill("SIGTERM");
  }
  expect(await server.exited).toBe(0);
  expect(existsSync(socket)).toBe(false);
  expect(await inProcess(["users", "add", "luis"], { DATA_DIR: env.DATA_DIR }, "primera-clave\n")).toMatchObject({
    code: 0,
  });
});

test.concurrent("serve on a busy port fails, and leaves the data directory free", async () => {
  const env = { DATA_DIR: await dataDirWithDatabase() };
  const busy = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  try {
    const result = await inProcess(["serve"], { ...env, HOST: "127.0.0.1", PORT: String(busy.port) });
    expect(result).toMatchObject({ code: 1 });
    expect(result.stderr).toContain(String(busy.port));
  } finally {
    busy.stop(true);
  }
  expect(await inProcess(["users", "add", "bea"], env, "primera-clave\n")).toMatchObject({ code: 0 });
});
