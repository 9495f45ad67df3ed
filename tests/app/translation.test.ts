/**
 * Translation as the service wires it (QUERY_TRANSLATION, APERTIUM_DIR): when it is on, what the
 * embedder receives, and that creating and searching still work when Apertium is missing or dies.
 */
import { afterEach, describe, expect, setDefaultTimeout, test } from "bun:test";
import { chmodSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { LocalEmbedder } from "../../src/adapters/providers/local-embedder.ts";
import { INSTALLED_MODEL_DIR } from "../../src/adapters/providers/local-model-files.ts";
import { findApertium } from "../../src/adapters/translation/apertium.ts";
import { CompositionRoot } from "../../src/app/composition-root.ts";
import { loadConfig } from "../../src/app/config.ts";
import { createHttpService, type HttpService } from "../../src/app/http-service.ts";
import type { Logger } from "../../src/app/logger.ts";
import { FakeEmbedder } from "../fakes/fake-embedder.ts";
import { FakeTimers } from "../fakes/fake-timers.ts";
import { callApp } from "../support/app-client.ts";
import { openNewPglite } from "../support/new-database.ts";
import { lowCostHasher } from "../support/password-hasher.ts";
import { useTempDirs } from "../support/temp-dirs.ts";

// Each container opens PGlite (a new database in memory, copied: no initdb here).
setDefaultTimeout(60_000);

const FAKE = join(import.meta.dir, "../fakes/fake-apertium.ts");
const ADMIN = { username: "admin", password: "una-contraseña-larga" };
const tempDir = useTempDirs("translation");
const closing: (() => Promise<void>)[] = [];

afterEach(async () => {
  for (const close of closing.splice(0)) await close().catch(() => {});
});

function capturingLogger() {
  const events: Record<string, unknown>[] = [];
  const push = (level: string) => (event: Record<string, unknown>) => events.push({ level, ...event });
  const logger: Logger = { debug: push("debug"), info: push("info"), warn: push("warn"), error: push("error") };
  return { logger, events };
}

/** An Apertium install prefix whose programs are the fake (tests/fakes/fake-apertium.ts). */
function fakeApertiumDir(): string {
  const dir = tempDir();
  mkdirSync(join(dir, "bin"));
  mkdirSync(join(dir, "share/apertium/modes"), { recursive: true });
  const program = join(dir, "bin/fake-apertium");
  writeFileSync(program, `#!/bin/sh\nexec '${process.execPath}' '${FAKE}' "$@"\n`);
  chmodSync(program, 0o755);
  writeFileSync(
    join(dir, "share/apertium/modes/spa-eng.mode"),
    "fake-apertium analyse es | fake-apertium $1 translate\n",
  );
  writeFileSync(join(dir, "share/apertium/modes/eng-spa.mode"), "fake-apertium analyse en | fake-apertium $1 echo\n");
  return dir;
}

/**
 * Translation's time limits (TRANSLATION_TIMEOUT_MS) run on fake timers here: a restart of the fake
 * pipelines may take longer than the limit on a loaded machine, which would make a test fail by
 * its speed alone.
 */
async function setUp(env: Record<string, string>, embedder = new FakeEmbedder(16)) {
  const { logger, events } = capturingLogger();
  const root = new CompositionRoot(loadConfig(env), logger, { overrides: { embedder, timers: new FakeTimers() } });
  closing.push(() => root.close());
  const translation = await root.translation();
  return { translation, events, embedder };
}

describe("translation as the composition root sets it up", () => {
  test("QUERY_TRANSLATION=on puts translation in front of any embedder and says so once", async () => {
    const { translation, events, embedder } = await setUp({
      QUERY_TRANSLATION: "on",
      APERTIUM_DIR: fakeApertiumDir(),
    });
    await translation.wrap(embedder).embed(["funda de terciopelo", "velvet cover"], "query");
    expect(embedder.calls.map((call) => call.text)).toEqual(["cover of velvet", "velvet cover"]);
    expect(events).toEqual([expect.objectContaining({ level: "info", event: "translation", enabled: true })]);
  });

  test("off, or auto with an embedder other than the offline model, leaves the embedder as it is", async () => {
    for (const env of [{ QUERY_TRANSLATION: "off" }, { QUERY_TRANSLATION: "auto" }]) {
      const { translation, events, embedder } = await setUp({ ...env, APERTIUM_DIR: fakeApertiumDir() });
      expect(translation.wrap(embedder)).toBe(embedder);
      expect(events).toEqual([expect.objectContaining({ level: "info", event: "translation", enabled: false })]);
    }
  });

  test("auto is on for the offline model when Apertium is found", async () => {
    const model = new LocalEmbedder(INSTALLED_MODEL_DIR); // not loaded: nothing here embeds
    const { events } = await setUp({ APERTIUM_DIR: fakeApertiumDir() }, model as unknown as FakeEmbedder);
    expect(events).toEqual([expect.objectContaining({ event: "translation", enabled: true })]);
  });

  test("without Apertium the service runs untranslated, and the reason is logged (a warning when asked for)", async () => {
    const missing = join(tempDir(), "no-apertium-here");
    const auto = await setUp(
      { APERTIUM_DIR: missing },
      new LocalEmbedder(INSTALLED_MODEL_DIR) as unknown as FakeEmbedder,
    );
    expect(auto.events).toEqual([
      expect.objectContaining({ level: "info", enabled: false, reason: expect.stringContaining("spa-eng.mode") }),
    ]);
    const on = await setUp({ QUERY_TRANSLATION: "on", APERTIUM_DIR: missing });
    expect(on.translation.wrap(on.embedder)).toBe(on.embedder);
    expect(on.events).toEqual([expect.objectContaining({ level: "warn", enabled: false })]);
  });

  test("an Apertium that does not answer at startup leaves translation off, with a warning", async () => {
    const dir = fakeApertiumDir();
    writeFileSync(join(dir, "bin/fake-apertium"), "#!/bin/sh\necho 'cannot open spa-eng.automorf.bin' >&2\nexit 1\n");
    const { translation, events, embedder } = await setUp({ QUERY_TRANSLATION: "on", APERTIUM_DIR: dir });
    expect(translation.wrap(embedder)).toBe(embedder);
    expect(events).toEqual([
      expect.objectContaining({ level: "warn", enabled: false, reason: expect.stringContaining("does not answer") }),
    ]);
  });
});

async function service(env: Record<string, string>) {
  const { logger, events } = capturingLogger();
  const embedder = new FakeEmbedder(16);
  const config = loadConfig({ ADMIN_USERNAME: ADMIN.username, ADMIN_PASSWORD: ADMIN.password, ...env });
  const container: HttpService = await createHttpService({ ...config, dataDir: tempDir() }, logger, {
    database: await openNewPglite(),
    embedder,
    passwordHasher: lowCostHasher(),
    timers: new FakeTimers(),
  });
  closing.push(() => container.close());
  const call = (method: string, path: string, json?: unknown) => callApp(container.app, method, path, { json, token });
  const token = (await callApp(container.app, "POST", "/auth/login", { form: ADMIN })).json.access_token as string;
  return { call, events, embedder };
}

const VELVET = { name: "Funda de terciopelo", description: "para el sofá de la casa", category: "Hogar" };

describe("the service with translation on", () => {
  test("creating and searching work when Apertium is missing", async () => {
    const { call, embedder } = await service({
      QUERY_TRANSLATION: "on",
      APERTIUM_DIR: join(tempDir(), "no-apertium-here"),
    });
    expect((await call("POST", "/products/", VELVET)).status).toBe(201);
    const search = await call("POST", "/products/search", { query: "funda de terciopelo" });
    expect(search.status).toBe(200);
    expect(search.json.results[0]).toMatchObject(VELVET);
    expect(embedder.calls.map((c) => c.text)).toEqual([
      `${VELVET.name}. ${VELVET.category}. ${VELVET.description}`,
      "funda de terciopelo",
    ]);
  });

  test("creating and searching work when Apertium dies mid-call; the next call restarts it", async () => {
    const { call, events, embedder } = await service({ QUERY_TRANSLATION: "on", APERTIUM_DIR: fakeApertiumDir() });
    const crashing = { ...VELVET, description: "esta descripción revienta el traductor" };
    const created = await call("POST", "/products/", crashing);
    expect(created.status).toBe(201);
    expect(created.json).toMatchObject(crashing);
    expect(events).toContainEqual(expect.objectContaining({ level: "warn", event: "translation_failed" }));

    expect((await call("POST", "/products/", VELVET)).status).toBe(201);
    const search = await call("POST", "/products/search", { query: "la funda de terciopelo" });
    expect(search.status).toBe(200);
    // Stored and returned as written; only the embedder saw the English.
    expect(search.json.results[0]).toMatchObject(VELVET);
    expect(embedder.calls.map((c) => c.text)).toEqual([
      `${crashing.name}. ${crashing.category}. ${crashing.description}`,
      "cover of velvet. Hogar. for the sofa of the house",
      "the cover of velvet",
    ]);
  });
});

test("the real Apertium is found on PATH when installed (CI installs it)", () => {
  const lookup = findApertium();
  if (!lookup.found) expect(lookup.reason).toContain("not installed");
  else expect(lookup.pipelines.translate).toContain("spa-eng.autobil.bin");
});
