/**
 * One catalogue, several processes (service instances, the CLI): once a re-embed has switched the
 * catalogue to another model, a process still embedding with the old one stores nothing. Its
 * product writes fail with EmbeddingSpaceChanged, also the one that embedded before the switch and
 * reaches the database after it (the race, on a server). And its watch (the service's) turns its
 * searches into the same refusal.
 */
import { expect, test } from "bun:test";
import { SqlEmbeddingSpace } from "../../src/adapters/postgres/embedding-space.ts";
import { EmbeddingSpaceWatch } from "../../src/adapters/postgres/embedding-space-watch.ts";
import { PostgresProducts } from "../../src/adapters/postgres/product-repository.ts";
import { vectorParam } from "../../src/adapters/postgres/schema.ts";
import type { SqlClient } from "../../src/adapters/postgres/sql-client.ts";
import { EmbeddingSpaceChanged } from "../../src/domain/errors.ts";
import type { Vector } from "../../src/domain/vector.ts";
import type { EmbeddingSpace, ProductText } from "../../src/ports/embedding-space.ts";
import type { EmbeddedProduct } from "../../src/ports/product-repository.ts";
import { FakeEmbedder } from "../fakes/fake-embedder.ts";
import { outOfRowValues } from "../support/out-of-row.ts";
import { forEachDatabase } from "../support/test-databases.ts";

const OLD: EmbeddingSpace = { model: "old-model", dimension: 4 };
const lamp = { name: "Lámpara", description: "LED", category: "hogar" };
const mug = { name: "Taza", description: "Térmica", category: "cocina" };

function row(product: typeof lamp, embedding: Vector): EmbeddedProduct {
  return { product, embedding, contentDigest: `digest of ${product.name}` };
}

/** What the new model makes of any product: one vector, so a stored vector of the old model stands out. */
function newVector(dimension: number): Vector {
  return Array.from({ length: dimension }, (_, i) => (i === 0 ? 1 : 0.5));
}

/** Switches the catalogue to `space` as `reembed` does; `embedRest` runs under the switch's lock. */
async function switchSpace(
  client: SqlClient,
  space: EmbeddingSpace,
  embedRest: (products: readonly ProductText[]) => Promise<Vector[]> = async (rest) =>
    rest.map(() => newVector(space.dimension)),
): Promise<void> {
  const store = new SqlEmbeddingSpace(client);
  await store.beginStaging(space);
  await store.switchTo(space, embedRest);
}

async function storedNames(client: SqlClient): Promise<string[]> {
  return (await client.query<{ name: string }>("SELECT name FROM products ORDER BY id")).map((r) => r.name);
}

forEachDatabase((db, engine) => {
  for (const next of [
    { model: "new-model", dimension: 4 },
    { model: "new-model", dimension: 3 },
  ]) {
    test(`after a switch to ${next.dimension === OLD.dimension ? "another model" : "another dimension"}, every product write of the old space stores nothing: EmbeddingSpaceChanged`, async () => {
      const client = await db.migrated(OLD);
      const heard: EmbeddingSpace[] = [];
      const old = new PostgresProducts(client, OLD.dimension, undefined, {
        ...OLD,
        changed: (stored) => heard.push(stored),
      }).in("default");
      const added = await old.add(row(lamp, [1, 0, 0, 0]));
      if (!("created" in added)) throw new Error("not created");
      const { id } = added.created;

      await switchSpace(client, next);

      const refused = async (write: Promise<unknown>) => {
        const error = await write.then(
          () => undefined,
          (thrown: unknown) => thrown,
        );
        expect(error).toBeInstanceOf(EmbeddingSpaceChanged);
        expect((error as EmbeddingSpaceChanged).stored).toEqual(next);
        expect((error as EmbeddingSpaceChanged).message).toContain("otro modelo de embeddings");
      };
      await refused(old.add(row(mug, [0, 1, 0, 0])));
      await refused(old.add(row(mug, [0, 1, 0, 0]), { owner: "user:1", key: "k", fingerprint: "f", ttlHours: 24 }));
      await refused(
        old.update(id, 1, {
          fields: { ...lamp, name: "Otra" },
          embedding: { vector: [0, 0, 1, 0], contentDigest: "x" },
        }),
      );
      await refused(old.update(id, 1, { fields: { ...lamp, category: "otra" } }));
      await refused(old.remove(id));
      await refused(old.writeMany([{ kind: "insert", row: row(mug, [0, 1, 0, 0]) }]));
      expect(heard[0]).toEqual(next);

      // Nothing of it stored: the one product, with its vector of the new model, and no idempotency record.
      expect(await storedNames(client)).toEqual([lamp.name]);
      const [vector] = await client.query<{ v: string }>("SELECT embedding::text AS v FROM products");
      expect(vector?.v).toBe(`[${newVector(next.dimension).join(",")}]`);
      expect(await client.query("SELECT 1 FROM idempotency_keys")).toEqual([]);
      // A repository of the new space writes as before.
      const current = new PostgresProducts(client, next.dimension, undefined, next).in("default");
      expect(await current.add(row(mug, newVector(next.dimension)))).toHaveProperty("created");
    });
  }

  test("a switch to 3072 dimensions gives each row its half-precision copy and bits, in the row: only the full vector is stored out of it", async () => {
    const client = await db.migrated(OLD);
    const old = new PostgresProducts(client, OLD.dimension).in("default");
    for (const [product, vector] of [
      [lamp, [1, 0, 0, 0]],
      [mug, [0, 1, 0, 0]],
    ] as const) {
      expect(await old.add(row(product, [...vector]))).toHaveProperty("created");
    }
    const next = { model: "new-model", dimension: 3072 };
    await switchSpace(client, next, async (rest) =>
      rest.map((_, i) => Array.from({ length: next.dimension }, (_, j) => Math.sin(i + j))),
    );

    const [copies] = await client.query<{ rows: number | string; bits: number | string }>(
      `SELECT count(*) AS rows,
              count(*) FILTER (WHERE embedding_bits = binary_quantize(embedding_half)::bit(${next.dimension})) AS bits
       FROM products WHERE embedding_half = embedding::halfvec(${next.dimension})`,
    );
    expect([Number(copies?.rows), Number(copies?.bits)]).toEqual([2, 2]);
    expect(await outOfRowValues(client, "products_c1")).toEqual([4 + 4 * next.dimension, 4 + 4 * next.dimension]);
  });

  test("a repository of the catalogue's space writes, and one not told its space is not checked", async () => {
    const client = await db.migrated(OLD);
    const checked = new PostgresProducts(client, OLD.dimension, undefined, OLD).in("default");
    const added = await checked.add(row(lamp, [1, 0, 0, 0]));
    if (!("created" in added)) throw new Error("not created");
    expect(await checked.update(added.created.id, 1, { fields: { ...lamp, category: "luz" } })).toHaveProperty(
      "updated",
    );
    expect(await checked.update(added.created.id, 1, { fields: lamp })).toEqual({ conflict: true });
    expect(await checked.remove(added.created.id + 100)).toBe(false);
    expect(await checked.writeMany([{ kind: "insert", row: row(mug, [0, 1, 0, 0]) }])).toHaveLength(1);
    expect(await checked.remove(added.created.id)).toBe(true);
    expect(await storedNames(client)).toEqual([mug.name]);
  });

  test.skipIf(engine === "pglite")(
    "the race: a write that embedded with the old model and reaches the database during the switch stores nothing once it commits",
    async () => {
      const client = await db.migrated(OLD);
      const old = new PostgresProducts(await db.another(), OLD.dimension, undefined, OLD).in("default");
      expect(await old.add(row(lamp, [1, 0, 0, 0]))).toHaveProperty("created");

      const next = { model: "new-model", dimension: 4 };
      const underLock = Promise.withResolvers<void>();
      const letSwitchEnd = Promise.withResolvers<void>();
      // The switch holds its lock on products while it embeds what was written since staging.
      const switched = switchSpace(client, next, async (rest) => {
        underLock.resolve();
        await letSwitchEnd.promise;
        return rest.map(() => newVector(next.dimension));
      });
      await underLock.promise;
      // The old process's write, embedded before the switch: it waits for the switch's lock.
      const write = old.add(row(mug, [0, 1, 0, 0])).then(
        () => undefined,
        (error: unknown) => error,
      );
      const watcher = await db.another();
      await waitUntilBlocked(watcher);
      letSwitchEnd.resolve();
      await switched;
      expect(await write).toBeInstanceOf(EmbeddingSpaceChanged);
      expect(await storedNames(client)).toEqual([lamp.name]);
    },
  );

  test("the watch: once the catalogue is in another space, embeddings and failing searches say EmbeddingSpaceChanged", async () => {
    const client = await db.migrated(OLD);
    const events: Record<string, unknown>[] = [];
    const watch = new EmbeddingSpaceWatch(client, OLD, { log: (event) => events.push(event) });
    const embedder = watch.guard(Object.assign(new FakeEmbedder(4, OLD.model), { callsAtOnce: 3, textsPerCall: 500 }));
    // An import embeds that many chunks ahead through it, a re-embedding batches of that many texts.
    expect(embedder).toMatchObject({ callsAtOnce: 3, textsPerCall: 500 });
    await watch.look();
    expect(watch.changedTo).toBeUndefined();
    expect(await embedder.embed(["taza"], "query")).toHaveLength(1);
    watch.found(OLD);
    expect(watch.changedTo).toBeUndefined();

    await new PostgresProducts(client, OLD.dimension).in("default").add(row(lamp, [1, 0, 0, 0]));
    await switchSpace(client, { model: "new-model", dimension: 3 });
    // Before the next look: a search with a query of the old dimension fails on the column, and says why.
    const search = watch
      .guardReads(client)
      .query("SELECT id FROM products ORDER BY embedding <=> $1::vector LIMIT 1", [vectorParam([1, 0, 0, 0])]);
    await expect(search).rejects.toBeInstanceOf(EmbeddingSpaceChanged);
    expect(watch.changedTo).toEqual({ model: "new-model", dimension: 3 });
    await expect(embedder.embed(["taza"], "query")).rejects.toBeInstanceOf(EmbeddingSpaceChanged);
    await watch.look();
    expect(events.map((event) => event.event)).toEqual(["embedding_space_changed"]);
    // Other failures stay as they are.
    await expect(watch.guardReads(client).query("SELECT * FROM nowhere")).rejects.not.toBeInstanceOf(
      EmbeddingSpaceChanged,
    );
    await watch.close();
  });
});

/**
 * Waits (bounded) until a statement is blocked by the holder of the strongest lock on `products`
 * (the switch): an event of the server's, not a duration.
 */
async function waitUntilBlocked(client: SqlClient): Promise<void> {
  for (let i = 0; i < 1000; i++) {
    const [row] = await client.query<{ blocked: boolean }>(
      `SELECT EXISTS (
         SELECT 1 FROM pg_locks holder, pg_stat_activity waiting
         WHERE holder.relation = 'products'::regclass AND holder.mode = 'ShareRowExclusiveLock' AND holder.granted
           AND holder.pid = ANY (pg_blocking_pids(waiting.pid))
       ) AS blocked`,
    );
    if (row?.blocked) return;
    await Bun.sleep(10);
  }
  throw new Error("the write never waited for the switch's lock");
}
