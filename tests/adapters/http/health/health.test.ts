import { describe, expect, test } from "bun:test";
import { READ_ONLY_PROBE_MESSAGE } from "../../../../src/adapters/http/health/health-routes.ts";
import { DatabaseUnavailable } from "../../../../src/domain/errors.ts";
import { createHarness } from "../harness.ts";

const READY = "Lista: base de datos conectada, migraciones aplicadas y modelo de embeddings cargado";
const notReady = (part: string) => ({ detail: `El servicio no está listo: ${part}` });

describe("GET /health/live", () => {
  test("answers 200 while the process runs, even with the database down, and touches nothing", async () => {
    const h = await createHarness();
    h.health.down = true;
    h.startup.embedderLoaded = false;
    let pings = 0;
    h.health.ping = async () => {
      pings++;
    };
    const response = await h.call("GET", "/health/live");
    expect(response.status).toBe(200);
    expect(response.json).toEqual({ message: "El proceso está en marcha" });
    expect(pings).toBe(0);
  });
});

describe("GET /health/ready", () => {
  test("200 once the database answers, its migrations are applied and the embedder is loaded", async () => {
    const h = await createHarness();
    const response = await h.call("GET", "/health/ready");
    expect(response.status).toBe(200);
    expect(response.json).toEqual({ message: READY, read_only: false });
  });

  test("on a database that takes no writes (a standby): 200, saying read-only", async () => {
    const h = await createHarness();
    h.startup.writable = false;
    const response = await h.call("GET", "/health/ready");
    expect(response.status).toBe(200);
    expect(response.json).toEqual({ message: READ_ONLY_PROBE_MESSAGE, read_only: true });
  });

  test("503 naming each failing part, with Retry-After", async () => {
    const h = await createHarness();
    const cases: [() => void, string][] = [
      [() => (h.startup.embedderLoaded = false), "el modelo de embeddings aún se está cargando"],
      [() => (h.startup.migrated = false), "faltan migraciones de la base de datos"],
      [() => (h.health.down = true), "la base de datos no responde"],
    ];
    for (const [breakIt, part] of cases) {
      breakIt();
      const response = await h.call("GET", "/health/ready");
      expect(response.status).toBe(503);
      expect(response.json).toEqual(notReady(part));
      expect(response.headers.get("retry-after")).toBe("5");
    }
  });

  test("a database that fails in any way is not ready, and the cause goes to the log", async () => {
    const h = await createHarness();
    h.health.ping = async () => {
      throw new Error("connection refused");
    };
    const response = await h.call("GET", "/health/ready");
    expect(response.json).toEqual(notReady("la base de datos no responde"));
    const failure = h.logs.find((event) => event.event === "request_failed");
    expect(failure).toMatchObject({ route: "/health/ready", status: 503, level: "warn" });
    // NotReady, caused by DatabaseUnavailable, caused by the ping's own error.
    const notReadyError = failure?.error as Error | undefined;
    expect((notReadyError?.cause as Error | undefined)?.cause).toEqual(new Error("connection refused"));
  });

  test("a migration check that fails is not ready either", async () => {
    const h = await createHarness();
    h.startup.migrated = new DatabaseUnavailable();
    const response = await h.call("GET", "/health/ready");
    expect(response.status).toBe(503);
    expect(response.json).toEqual(notReady("no se pudieron comprobar las migraciones de la base de datos"));
  });

  test("GET / keeps its contract: the Spanish message after a database round trip", async () => {
    const h = await createHarness();
    h.startup.embedderLoaded = false;
    const response = await h.call("GET", "/");
    expect(response.status).toBe(200);
    expect(response.json).toEqual({
      message: "La API de búsqueda semántica de SKU está lista y la base de datos está conectada",
    });
  });
});
