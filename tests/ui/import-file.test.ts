/** Reading an import file in the page, and sending it in batches (the browser part is in page.test.ts). */
import { describe, expect, test } from "bun:test";
import { ApiError } from "../../src/ui/api.ts";
import {
  type BulkReport,
  csvRecords,
  type FileItem,
  type ImportProgress,
  importItems,
  importText,
  readImportFile,
  sendBatch,
  UnreadableFile,
} from "../../src/ui/import-file.ts";

const CAFETERA = { name: "Cafetera", description: "Italiana", category: "Cocina", sku: "CAF-6" };

describe("readImportFile", () => {
  test("JSON Lines: one product per line, blank lines skipped, a broken line reported by its number", () => {
    const text = `${JSON.stringify(CAFETERA)}\r\n\n{ roto\n${JSON.stringify({ name: "Tetera" })}\n`;
    expect(readImportFile("catalogo.jsonl", text)).toEqual([
      { where: "línea 1", value: CAFETERA },
      { where: "línea 3", problem: "No es JSON válido" },
      { where: "línea 4", value: { name: "Tetera" } },
    ]);
  });

  test("a JSON array, told by its first character; a broken one cannot be imported", () => {
    expect(readImportFile("catalogo.json", `\uFEFF [${JSON.stringify(CAFETERA)}, 7]`)).toEqual([
      { where: "elemento 1", value: CAFETERA },
      { where: "elemento 2", value: 7 },
    ]);
    expect(readImportFile("sin-extension", JSON.stringify(CAFETERA))).toEqual([{ where: "línea 1", value: CAFETERA }]);
    expect(() => readImportFile("catalogo.json", "[{")).toThrow(UnreadableFile);
  });

  test("CSV: a header in any order and case, quoted fields, an empty sku as none, lines counted", () => {
    const csv =
      'Category,NAME,description,sku\nCocina,Cafetera,"Italiana, de ""6"" tazas",CAF-6\n\nCocina,Tetera,"Dos\nlíneas", \n';
    expect(readImportFile("catalogo.csv", csv)).toEqual([
      {
        where: "línea 2",
        value: { category: "Cocina", name: "Cafetera", description: 'Italiana, de "6" tazas', sku: "CAF-6" },
      },
      { where: "línea 4", value: { category: "Cocina", name: "Tetera", description: "Dos\nlíneas", sku: null } },
    ]);
  });

  test("CSV: attribute columns typed as the command-line import types them; a cell not of its type is an item that failed", () => {
    const csv =
      "name,description,category,price,in_stock,sizes:list,brand\n" +
      'Cafetera,Italiana,Cocina,"24,50",sí,4|6, Bialetti \n' +
      "Tetera,Verde,Cocina,barata,no,,\n";
    expect(readImportFile("catalogo.csv", csv)).toEqual([
      {
        where: "línea 2",
        value: {
          name: "Cafetera",
          description: "Italiana",
          category: "Cocina",
          attributes: { price: 24.5, in_stock: true, sizes: ["4", "6"], brand: "Bialetti" },
        },
      },
      {
        where: "línea 3",
        problem:
          "La columna 'price' es de números y «barata» no lo es (escríbalo como 1234.50 o 1234,50, sin separador de miles ni moneda)",
      },
    ]);
  });

  test("CSV: semicolons between the fields when the header holds more of them than commas", () => {
    const csv =
      'name;description;category;price\r\nCafetera;"Italiana; 6 tazas";Cocina;24,50\r\nTetera, verde;Hierro;Cocina;\r\n';
    expect(readImportFile("hoja.csv", csv)).toEqual([
      {
        where: "línea 2",
        value: { name: "Cafetera", description: "Italiana; 6 tazas", category: "Cocina", attributes: { price: 24.5 } },
      },
      { where: "línea 3", value: { name: "Tetera, verde", description: "Hierro", category: "Cocina" } },
    ]);
  });

  test("CSV: a column that is neither a product field nor an attribute, a bad type, a repeated or a missing column, or an empty file, cannot be imported", () => {
    expect(() => readImportFile("a.csv", "name,description,category,precio final\n")).toThrow(
      "La cabecera CSV tiene una columna que no es name, description, category, sku ni el nombre de un atributo (minúsculas, cifras y «_», empezando por una letra): «precio final».",
    );
    expect(() => readImportFile("a.csv", "name,description,category,price:money\n")).toThrow(
      "La columna «price:money» de la cabecera CSV no nombra un tipo de atributo",
    );
    expect(() => readImportFile("a.csv", "name,description,category,Brand,brand\n")).toThrow(
      "La cabecera CSV repite la columna «brand».",
    );
    expect(() => readImportFile("a.csv", "name,description\nx,y\n")).toThrow("A la cabecera CSV le falta: category.");
    expect(() => readImportFile("a.csv", "\n\n")).toThrow("El archivo está vacío.");
  });

  test("a file not in UTF-8 (a spreadsheet's Windows-1252 CSV) cannot be imported, naming its first such line; UTF-8 reads as it is", () => {
    const latin1 = new Uint8Array([
      ...new TextEncoder().encode("name,description,category\nTetera,Verde,Cocina\nCaf"),
      0xe9, // é in Windows-1252: no UTF-8 sequence
      ...new TextEncoder().encode(",Italiana,Cocina\n"),
    ]);
    expect(() => importText(latin1)).toThrow(
      "El archivo no está en UTF-8 (la línea 3 no lo es): guárdelo como «CSV UTF-8» o en UTF-8 e impórtelo de nuevo.",
    );
    expect(() => importText(latin1)).toThrow(UnreadableFile);
    const utf8 = new TextEncoder().encode("name,description,category\nCafé,Italiana,Cocina\n");
    expect(importText(utf8)).toBe("name,description,category\nCafé,Italiana,Cocina\n");
  });

  test("csvRecords: CRLF, a last line without its line break, an empty last field", () => {
    expect(csvRecords('a,b\r\n"x\r\ny",\r\nz,w')).toEqual([
      { line: 1, cells: ["a", "b"] },
      { line: 2, cells: ["x\r\ny", ""] },
      { line: 4, cells: ["z", "w"] },
    ]);
  });
});

describe("importItems", () => {
  const items = (count: number): FileItem[] =>
    Array.from({ length: count }, (_, i) => ({ where: `línea ${i + 2}`, value: { name: `P${i}` } }));
  /** A service that creates every product, except those named in `fail`. */
  const service = (fail: readonly string[] = []) => {
    const batches: number[] = [];
    const send = async (values: unknown[]): Promise<BulkReport> => {
      batches.push(values.length);
      const outcomes = values.map((value, index) => {
        const failed = fail.includes((value as { name: string }).name);
        return failed
          ? { index, status: "failed" as const, detail: "El campo 'category' es obligatorio" }
          : { index, status: "created" as const };
      });
      const created = outcomes.filter((outcome) => outcome.status === "created").length;
      return { items: outcomes, counts: { created, updated: 0, unchanged: 0, failed: values.length - created } };
    };
    return { batches, send };
  };

  test("sends the items in batches, in order, and reports after each: counts and failures with their place", async () => {
    const { batches, send } = service(["P3"]);
    const list = items(5);
    list.splice(1, 0, { where: "línea 99", problem: "No es JSON válido" });
    const reports: ImportProgress[] = [];
    const last = await importItems(list, {
      send,
      batchSize: 2,
      signal: new AbortController().signal,
      onProgress: (progress) => reports.push(progress),
    });
    expect(batches).toEqual([1, 2, 2]);
    expect(reports.map((report) => report.done)).toEqual([0, 2, 4, 6]);
    expect(last.counts).toEqual({ created: 4, updated: 0, unchanged: 0, failed: 2 });
    expect(last.failures).toEqual([
      { where: "línea 99", detail: "No es JSON válido" },
      { where: "línea 5", detail: "El campo 'category' es obligatorio" },
    ]);
  });

  test("a batch the service finds too large (413) is split; a rate limit (429) is waited out", async () => {
    const { batches, send } = service();
    let refusals = [413, 413, 429];
    const waits: number[] = [];
    const reports: ImportProgress[] = [];
    const last = await importItems(items(10), {
      send: async (values) => {
        const [status, ...rest] = refusals;
        refusals = rest;
        if (status === 413) throw new ApiError(413, "El cuerpo de la petición supera el máximo");
        if (status === 429) throw new ApiError(429, "Demasiadas peticiones", 3);
        return send(values);
      },
      batchSize: 8,
      signal: new AbortController().signal,
      onProgress: (progress) => reports.push(progress),
      sleep: async (ms) => void waits.push(ms),
    });
    expect(batches).toEqual([2, 2, 2, 2, 2]);
    expect(waits).toEqual([3000]);
    expect(reports.some((report) => report.waitingSeconds === 3)).toBe(true);
    expect(last.counts.created).toBe(10);
  });

  test("any other error stops the import there; an abort stops it between batches", async () => {
    const { send } = service();
    const reports: ImportProgress[] = [];
    let calls = 0;
    const failing = importItems(items(6), {
      send: async (values) => {
        if (++calls === 2) throw new ApiError(503, "El servicio no está disponible");
        return send(values);
      },
      batchSize: 2,
      signal: new AbortController().signal,
      onProgress: (progress) => reports.push(progress),
    });
    await expect(failing).rejects.toThrow("El servicio no está disponible");
    expect(reports.at(-1)?.done).toBe(2);

    const abort = new AbortController();
    const stopped = importItems(items(6), {
      send: async (values) => {
        abort.abort(new DOMException("detenida", "AbortError"));
        return send(values);
      },
      batchSize: 2,
      signal: abort.signal,
      onProgress: () => {},
    });
    await expect(stopped).rejects.toThrow("detenida");
  });
});

describe("sendBatch", () => {
  const created = (index: number) => ({ index, status: "created" as const, id: index + 1 });
  const counts = (n: number) => ({ created: n, updated: 0, unchanged: 0, failed: 0 });

  /** A service answering each request with the next of `answers`, recording what was asked. */
  function service(answers: Response[]) {
    const asked: string[] = [];
    return {
      asked,
      request: async (path: string, init: RequestInit = {}) => {
        asked.push(`${init.method ?? "GET"} ${path}`);
        const answer = answers.shift();
        if (!answer) throw new Error(`no answer left for ${path}`);
        return answer;
      },
    };
  }
  const json = (body: unknown, status = 200, headers: Record<string, string> = {}) =>
    new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json", ...headers } });

  test("a report answered at once (200) is the batch's report", async () => {
    const api = service([json({ items: [created(0)], counts: counts(1) })]);
    const report = await sendBatch(api, [{ name: "x" }], new AbortController().signal);
    expect(report).toEqual({ items: [created(0)], counts: counts(1) });
    expect(api.asked).toEqual(["POST /products/bulk"]);
  });

  test("a batch goes where it is told: the catalogue the import began in, its job as the answer names it", async () => {
    const api = service([
      json({ id: 9, total: 1, error: null, status: "enqueued" }, 202, { location: "/jobs/9" }),
      json({ id: 9, status: "succeeded", counts: counts(1), items: [created(0)], next_cursor: null }),
    ]);
    const signal = new AbortController().signal;
    await sendBatch(api, [{ name: "x" }], signal, async () => {}, "/catalogues/norte/products/bulk");
    expect(api.asked).toEqual(["POST /catalogues/norte/products/bulk", "GET /jobs/9"]);
  });

  test("a batch that became a job (202) is followed until it has finished, every page of its report read", async () => {
    const job = { id: 7, total: 3, error: null };
    const api = service([
      json({ ...job, status: "enqueued", counts: { ...counts(0), pending: 3 } }, 202, { location: "/jobs/7" }),
      json({
        ...job,
        status: "processing",
        counts: { ...counts(1), pending: 2 },
        items: [created(0)],
        next_cursor: null,
      }),
      json({
        ...job,
        status: "succeeded",
        counts: { ...counts(3), pending: 0 },
        items: [created(0), created(1)],
        next_cursor: "1",
      }),
      json({
        ...job,
        status: "succeeded",
        counts: { ...counts(3), pending: 0 },
        items: [created(2)],
        next_cursor: null,
      }),
    ]);
    const waits: number[] = [];
    const report = await sendBatch(api, [1, 2, 3], new AbortController().signal, async (ms) => void waits.push(ms));
    expect(report).toEqual({ items: [created(0), created(1), created(2)], counts: counts(3) });
    expect(api.asked).toEqual(["POST /products/bulk", "GET /jobs/7", "GET /jobs/7", "GET /jobs/7?cursor=1"]);
    expect(waits).toEqual([1_000, 1_000]);
  });
});
