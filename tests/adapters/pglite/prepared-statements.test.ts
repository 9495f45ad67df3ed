import { afterAll, beforeAll, expect, test } from "bun:test";
import { PGlite } from "@electric-sql/pglite";
import { PreparedStatements } from "../../../src/adapters/pglite/prepared-statements.ts";
import { newDatabaseTarball } from "../../support/new-database.ts";

let db: PGlite;
beforeAll(async () => {
  db = await PGlite.create({ loadDataDir: await newDatabaseTarball() });
});
afterAll(() => db.close());

/** The statements PostgreSQL holds prepared in this session, by their text. */
async function preparedTexts(): Promise<string[]> {
  const { rows } = await db.query<{ statement: string }>(
    "SELECT statement FROM pg_prepared_statements WHERE name LIKE 'sku_search_%' ORDER BY prepare_time",
  );
  return rows.map((row) => row.statement);
}

test("a statement is prepared once and run again by name; its rows are those of PGlite's own query, parameters of every kind included", async () => {
  const statements = new PreparedStatements(db);
  const text = `SELECT $1::int + 1 AS n, $2::text[] AS words, $3::jsonb AS attributes, $4::bigint AS big,
    $5::text IS NULL AS missing, now() - now() AS none`;
  const params = [41, ["a", "b,c", 'd"e'], { zone: ["norte"], price: 9.5 }, "9007199254740993", null];
  const expected = (await db.query(text, params)).rows;
  for (let run = 0; run < 7; run++) expect(await statements.query(db, text, params)).toEqual(expected);
  expect(await preparedTexts()).toEqual([text]);
});

test("a table made again with other columns: a statement prepared before runs on the new one, in a transaction too", async () => {
  const statements = new PreparedStatements(db);
  await statements.query(db, "CREATE TABLE remade (v integer)", []);
  await statements.query(db, "INSERT INTO remade VALUES (1)", []);
  expect(await statements.query(db, "SELECT v FROM remade", [])).toEqual([{ v: 1 }]);
  await statements.query(db, "DROP TABLE remade", []);
  await statements.query(db, "CREATE TABLE remade (v text)", []);
  await statements.query(db, "INSERT INTO remade VALUES ('uno')", []);
  // PostgreSQL refuses to run the old one ("cached plan must not change result type"): prepared again.
  await db.transaction(async (tx) => {
    expect(await statements.query(tx, "SELECT v FROM remade", [])).toEqual([{ v: "uno" }]);
  });
  expect(await statements.query(db, "SELECT v FROM remade", [])).toEqual([{ v: "uno" }]);
});

test("errors: a failing statement throws PostgreSQL's error and the session goes on; one that does not parse is not kept; in a transaction the error ends it", async () => {
  const statements = new PreparedStatements(db);
  const divide = "SELECT 1 / $1::int AS q";
  await expect(statements.query(db, divide, [0])).rejects.toMatchObject({ code: "22012" });
  expect(await statements.query(db, divide, [1])).toEqual([{ q: 1 }]);
  const before = await preparedTexts();
  await expect(statements.query(db, "SELECT FROM WHERE", [])).rejects.toMatchObject({ code: "42601" });
  expect(await preparedTexts()).toEqual(before);
  await expect(
    db.transaction(async (tx) => {
      await statements.query(tx, divide, [0]);
    }),
  ).rejects.toMatchObject({ code: "22012" });
  expect(await statements.query(db, divide, [2])).toEqual([{ q: 0 }]);
});

test("at most `capacity` statements are kept: the least recently run is closed first", async () => {
  const statements = new PreparedStatements(db, 2);
  const [one, two, three] = ["SELECT 1 AS one", "SELECT 2 AS two", "SELECT 3 AS three"] as const;
  const kept = async () => (await preparedTexts()).filter((text) => [one, two, three].includes(text as never));
  await statements.query(db, one, []);
  await statements.query(db, two, []);
  await statements.query(db, one, []);
  await statements.query(db, three, []);
  expect((await kept()).sort()).toEqual([one, three].sort());
});
