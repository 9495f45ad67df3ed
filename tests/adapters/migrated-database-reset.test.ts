/**
 * The test databases' `migrated()` (tests/support/migrated-database.ts) hands the next test the last
 * one's database brought back to how its migration left it: that database must be one a test cannot
 * tell from a new migration's, or the contract tests would pass on leftovers.
 */
import { expect, test } from "bun:test";
import { PostgresCatalogueRepository } from "../../src/adapters/postgres/catalogue-repository.ts";
import { PostgresProducts } from "../../src/adapters/postgres/product-repository.ts";
import { prepareDatabase } from "../../src/adapters/postgres/schema.ts";
import type { SqlClient } from "../../src/adapters/postgres/sql-client.ts";
import { PostgresUserRepository } from "../../src/adapters/postgres/user-repository.ts";
import { snapshotMigrated } from "../support/migrated-database.ts";
import { forEachDatabase } from "../support/test-databases.ts";

const SPACE = { model: "test-model", dimension: 4 };

/** When each migration was recorded: a new migration records them anew, a reset writes them back. */
async function migrationTimes(client: SqlClient): Promise<string[]> {
  const rows = await client.query<{ at: string }>(
    "SELECT applied_at::text AS at FROM schema_migrations ORDER BY version",
  );
  return rows.map((row) => row.at);
}

/** What a test did: products, a user, a catalogue (its partition), an index, statistics, sequences drawn. */
async function useIt(client: SqlClient): Promise<void> {
  await new PostgresUserRepository(client).create("ana", "h", "admin");
  expect(await new PostgresCatalogueRepository(client).create("outlet")).toBe(true);
  const products = new PostgresProducts(client, SPACE.dimension);
  for (const [catalogue, sku] of [
    ["default", "A-1"],
    ["outlet", "B-1"],
  ] as const) {
    const added = await products.in(catalogue).add({
      product: { sku, name: "zapatilla", description: "", category: "calzado" },
      embedding: [1, 0, 0, 0],
      contentDigest: "d",
    });
    expect(added).toHaveProperty("created");
  }
  await client.query("CREATE INDEX products_c1_test_only ON products_c1 (name)");
  await client.query("ANALYZE");
}

forEachDatabase((db) => {
  test("the next migrated() of the same space is the last one's database as a new migration leaves it", async () => {
    const first = await db.migrated(SPACE);
    const migratedAt = await migrationTimes(first);
    await useIt(first);
    await db.cleanup();

    const reset = await db.migrated(SPACE);
    // Reset, not migrated again: the migrations' own rows are the ones written the first time.
    expect(await migrationTimes(reset)).toEqual(migratedAt);
    expect(await new PostgresUserRepository(reset).count()).toBe(0);
    expect(await new PostgresCatalogueRepository(reset).list()).toEqual([expect.objectContaining({ name: "default" })]);
    // Its statistics cleared too: a schema holding any cannot be taken as migrated.
    const afterReset = await snapshotMigrated(reset, "");
    if (!afterReset) throw new Error("the database brought back holds planner statistics");
    // A product added now gets the first id again, and is the only one found.
    const products = new PostgresProducts(reset, SPACE.dimension).in("default");
    const added = await products.add({
      product: { sku: "C-1", name: "lámpara", description: "", category: "hogar" },
      embedding: [0, 1, 0, 0],
      contentDigest: "d",
    });
    expect(added).toMatchObject({ created: { id: 1 } });
    expect((await products.searchByVector([0, 1, 0, 0], { limit: 10 })).map((hit) => hit.id)).toEqual([1]);
    await db.cleanup();

    // The same, in every table, sequence, relation and planner figure, as a database just migrated.
    const migrated = await db.fresh();
    await prepareDatabase(migrated, SPACE);
    const justMigrated = await snapshotMigrated(migrated, "");
    if (!justMigrated) throw new Error("a new migration left planner statistics");
    const { tables, ...definition } = justMigrated;
    const { tables: resetTables, ...resetDefinition } = afterReset;
    expect(resetDefinition).toEqual(definition);
    // Their rows but for the times the migrations wrote them (now(), when they ran).
    const rowsOf = (list: typeof tables) =>
      list.map(({ name, rows, bytes }) => ({
        name,
        bytes,
        rows: rows?.replace(/"\d{4}-\d\d-\d\dT[^"]+"/g, '"(time)"'),
      }));
    expect(rowsOf(resetTables)).toEqual(rowsOf(tables));
  });

  test("a database whose definition a test changed is migrated anew, not reset", async () => {
    const first = await db.migrated(SPACE);
    const migratedAt = await migrationTimes(first);
    await first.query("ALTER TABLE products ADD COLUMN colour text");
    await db.cleanup();

    const next = await db.migrated(SPACE);
    expect(await migrationTimes(next)).not.toEqual(migratedAt);
    const [column] = await next.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM information_schema.columns WHERE table_schema = current_schema() AND column_name = 'colour'",
    );
    expect(column?.n).toBe(0);
  });

  test("another space is migrated anew, with its own dimension", async () => {
    await db.migrated(SPACE);
    await db.cleanup();
    const other = await db.migrated({ model: "test-model", dimension: 3 });
    const [row] = await other.query<{ dimension: number }>("SELECT dimension FROM embedding_space");
    expect(row?.dimension).toBe(3);
  });
});
