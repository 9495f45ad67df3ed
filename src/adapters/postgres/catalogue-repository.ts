import type { CatalogueRepository, CatalogueSummary } from "../../ports/catalogue-repository.ts";
import { poolsOf, type ReadWriteClients } from "./read-write-clients.ts";
import { cataloguePartition, createCataloguePartition } from "./schema.ts";
import type { SqlClient } from "./sql-client.ts";

/**
 * The catalogues in `catalogues` (migration 16), each with its partition of `products`
 * (`products_c<id>`): made with the catalogue, dropped with it (its products and vector index go
 * at once, with no row-by-row delete). Making or dropping a partition locks `products` for a moment
 * (PostgreSQL 15 takes an ACCESS EXCLUSIVE lock on the parent): statements under way finish first
 * and the next ones wait for it. Counting lists every catalogue's products in one scan of the
 * catalogues' indexes (an exact count, as GET /catalogues promises).
 */
export class PostgresCatalogueRepository implements CatalogueRepository {
  private readonly pools: ReadWriteClients;

  constructor(db: SqlClient | ReadWriteClients) {
    this.pools = poolsOf(db);
  }

  async create(name: string): Promise<boolean> {
    const created = await this.pools.writes.transaction(async (tx) => {
      const [row] = await tx.query<{ id: number }>(
        "INSERT INTO catalogues (name) VALUES ($1) ON CONFLICT (name) DO NOTHING RETURNING id",
        [name],
      );
      if (!row) return false;
      await createCataloguePartition(tx, Number(row.id), name);
      return true;
    });
    if (created) await this.pools.wrote();
    return created;
  }

  async list(): Promise<CatalogueSummary[]> {
    const rows = await this.pools.writes.query<{
      name: string;
      products: number | string;
      created_at: Date;
      embedded_attributes: string[];
    }>(
      `SELECT c.name, coalesce(p.products, 0) AS products, c.created_at, c.embedded_attributes
       FROM catalogues c
       LEFT JOIN (SELECT catalogue, count(*) AS products FROM products GROUP BY catalogue) p ON p.catalogue = c.name
       ORDER BY c.name`,
    );
    return rows.map((row) => ({
      name: row.name,
      products: Number(row.products),
      createdAt: new Date(row.created_at),
      embeddedAttributes: [...row.embedded_attributes],
    }));
  }

  async names(): Promise<string[]> {
    const rows = await this.pools.reads.query<{ name: string }>("SELECT name FROM catalogues ORDER BY name");
    return rows.map((row) => row.name);
  }

  async remove(name: string): Promise<boolean> {
    const removed = await this.pools.writes.transaction(async (tx) => {
      const [row] = await tx.query<{ id: number }>("DELETE FROM catalogues WHERE name = $1 RETURNING id", [name]);
      if (!row) return false;
      await tx.query(`DROP TABLE ${cataloguePartition(Number(row.id))}`);
      // Its imports, finished or not, write nowhere now; its words, synonyms and analytics go with it
      // (a catalogue made again under the name starts with none of them).
      for (const table of ["import_jobs", "search_vocabulary", "synonym_sets", "searches", "search_events"]) {
        await tx.query(`DELETE FROM ${table} WHERE catalogue = $1`, [name]);
      }
      return true;
    });
    if (removed) await this.pools.wrote();
    return removed;
  }

  async setEmbeddedAttributes(name: string, keys: readonly string[]): Promise<boolean> {
    const rows = await this.pools.writes.query(
      "UPDATE catalogues SET embedded_attributes = $2::text[] WHERE name = $1 RETURNING id",
      [name, [...keys]],
    );
    if (rows.length > 0) await this.pools.wrote();
    return rows.length > 0;
  }

  async exists(name: string): Promise<boolean> {
    const rows = await this.pools.reads.query("SELECT 1 FROM catalogues WHERE name = $1", [name]);
    return rows.length > 0;
  }
}
