/**
 * A migrated database brought back to how its migration left it, instead of migrated again: the
 * migrations' 140-odd statements cost 100 to 150 ms a test (PGlite's DDL about 3 ms a table), the
 * repository tests ask for about 330 migrated databases a run, and bringing one back costs 20 to
 * 30 ms.
 *
 * After migrating, `snapshotMigrated` records what the schema holds: its definition (a digest of
 * the catalog rows of its relations, columns, constraints, indexes, policies, triggers, functions
 * and views), the rows the migrations wrote, its sequences and the planner's figures of each
 * relation. `resetToMigrated` then drops what a test added (a catalogue's partition, a vector
 * index), and if the definition is the snapshot's, empties the tables the test wrote, writes the
 * migrations' rows again and restores the sequences and planner figures (TRUNCATE leaves a table's
 * figures as never analysed where a migration left them analysed empty, and ANALYZE's statistics
 * stay): a test cannot tell the result from a new migration. Any other difference (a column added,
 * a policy changed) and it answers false: the caller migrates a new database.
 *
 * The reset writes the system catalogs (planner figures and statistics), which needs a superuser,
 * as the test databases' users are (PGlite's, TEST_DATABASE_URL's `postgres`); without one it
 * answers false too.
 */
import type { SqlClient } from "../../src/adapters/postgres/sql-client.ts";

/** How a schema stood just after its migration. */
export interface MigratedSnapshot {
  /** What it was migrated for (the embedding space and options): another key migrates anew. */
  key: string;
  /** Digest of its definition. */
  definition: string;
  /** Its relations as `kind:name`. */
  relations: string[];
  /** Each table's size in bytes, and the digest and rows of those the migrations wrote rows into. */
  tables: { name: string; bytes: number; digest: string | null; rows: string | null; columns: string[] }[];
  sequences: { name: string; lastValue: string | null; startValue: string }[];
  /** The planner's figures of each relation (pg_class). */
  planner: { name: string; relpages: number; reltuples: number; relallvisible: number }[];
}

/** The catalog rows that define the current schema's objects, as text (digested by DEFINITION_DIGEST). */
const DEFINITION_ROWS = `
  SELECT concat_ws('|', c.relname, c.relkind, c.relpersistence, c.reloptions, c.relacl, c.relrowsecurity,
                   c.relforcerowsecurity, c.relispartition, pg_get_expr(c.relpartbound, c.oid)) AS row
    FROM pg_class c WHERE c.relnamespace = current_schema()::regnamespace
  UNION ALL
  SELECT concat_ws('|', c.relname, a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull, a.attgenerated,
                   a.attidentity, a.attstorage, a.attacl, pg_get_expr(d.adbin, d.adrelid))
    FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
    LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
   WHERE c.relnamespace = current_schema()::regnamespace AND a.attnum > 0 AND NOT a.attisdropped
  UNION ALL
  SELECT concat_ws('|', conrelid::regclass, conname, pg_get_constraintdef(oid))
    FROM pg_constraint WHERE connamespace = current_schema()::regnamespace
  UNION ALL
  SELECT concat_ws('|', c.relname, pg_get_indexdef(i.indexrelid))
    FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid WHERE c.relnamespace = current_schema()::regnamespace
  UNION ALL
  SELECT concat_ws('|', c.relname, p.polname, p.polcmd, p.polpermissive, p.polroles,
                   pg_get_expr(p.polqual, p.polrelid), pg_get_expr(p.polwithcheck, p.polrelid))
    FROM pg_policy p JOIN pg_class c ON c.oid = p.polrelid WHERE c.relnamespace = current_schema()::regnamespace
  UNION ALL
  SELECT concat_ws('|', c.relname, pg_get_triggerdef(t.oid))
    FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
   WHERE c.relnamespace = current_schema()::regnamespace AND NOT t.tgisinternal
  UNION ALL
  SELECT concat_ws('|', p.oid::regprocedure, p.prorettype::regtype, md5(p.prosrc), p.proacl, p.prosecdef, p.proconfig)
    FROM pg_proc p WHERE p.pronamespace = current_schema()::regnamespace
     AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e')
  UNION ALL
  SELECT concat_ws('|', viewname, md5(definition)) FROM pg_views WHERE schemaname = current_schema()`;

/** Its digest, the schema's own name left out (index definitions name it): the same for any schema. */
const DEFINITION_DIGEST = `
  SELECT md5(string_agg(replace(row, quote_ident(current_schema()) || '.', ''), E'\\n' ORDER BY row)) AS digest
    FROM (${DEFINITION_ROWS}) AS definition`;

/** The kinds of relation a schema's own are (RELATIONS), and how each is dropped, in this order: tables first (their indexes go with them). */
const DROPPED_AS: Record<string, string> = {
  r: "TABLE",
  p: "TABLE",
  v: "VIEW",
  m: "MATERIALIZED VIEW",
  i: "INDEX",
  I: "INDEX",
  S: "SEQUENCE",
};

const RELATIONS = `
  SELECT relkind::text AS kind, relname AS name FROM pg_class
   WHERE relnamespace = current_schema()::regnamespace
     AND relkind IN (${Object.keys(DROPPED_AS)
       .map((kind) => `'${kind}'`)
       .join(", ")}) ORDER BY relname`;

/** Each table (partitions included: they hold the rows) and its size. */
const TABLES = `
  SELECT relname AS name, pg_relation_size(oid)::float8 AS bytes FROM pg_class
   WHERE relnamespace = current_schema()::regnamespace AND relkind = 'r' ORDER BY relname`;

const PLANNER_FIGURES = `
  SELECT relname AS name, relpages, reltuples::float8 AS reltuples, relallvisible FROM pg_class
   WHERE relnamespace = current_schema()::regnamespace ORDER BY relname`;

const SEQUENCES = `
  SELECT sequencename AS name, last_value::text AS "lastValue", start_value::text AS "startValue"
    FROM pg_sequences WHERE schemaname = current_schema() ORDER BY sequencename`;

const quote = (name: string) => `"${name.replaceAll('"', '""')}"`;

/** A digest of a table's rows, in an order of their own. */
async function rowsDigest(client: SqlClient, table: string): Promise<string | null> {
  const [row] = await client.query<{ digest: string | null }>(
    `SELECT md5(string_agg(t::text, E'\\n' ORDER BY t::text)) AS digest FROM ${quote(table)} AS t`,
  );
  return row?.digest ?? null;
}

/**
 * Records how the current schema stands, just after `prepareDatabase`; `key` names what it was
 * migrated for. Undefined when the migrations left planner statistics, which every reset clears:
 * such a schema cannot be brought back, and each test migrates a new one.
 */
export async function snapshotMigrated(client: SqlClient, key: string): Promise<MigratedSnapshot | undefined> {
  const [statistics] = await client.query<{ count: number }>(
    `SELECT count(*)::int AS count FROM pg_statistic s JOIN pg_class c ON c.oid = s.starelid
      WHERE c.relnamespace = current_schema()::regnamespace`,
  );
  if (statistics?.count) return undefined;
  const [definition] = await client.query<{ digest: string }>(DEFINITION_DIGEST);
  const relations = await client.query<{ kind: string; name: string }>(RELATIONS);
  const tables: MigratedSnapshot["tables"] = [];
  for (const { name, bytes } of await client.query<{ name: string; bytes: number }>(TABLES)) {
    const digest = await rowsDigest(client, name);
    if (digest === null) {
      tables.push({ name, bytes, digest, rows: null, columns: [] });
      continue;
    }
    // The columns a row is written with: not those generated from the others.
    const columns = await client.query<{ name: string }>(
      `SELECT attname AS name FROM pg_attribute
        WHERE attrelid = $1::regclass AND attnum > 0 AND NOT attisdropped AND attgenerated = '' ORDER BY attnum`,
      [quote(name)],
    );
    const [rows] = await client.query<{ rows: string }>(`SELECT json_agg(t)::text AS rows FROM ${quote(name)} AS t`);
    tables.push({ name, bytes, digest, rows: rows?.rows ?? null, columns: columns.map((column) => column.name) });
  }
  return {
    key,
    definition: definition?.digest ?? "",
    relations: relations.map((relation) => `${relation.kind}:${relation.name}`),
    tables,
    sequences: await client.query(SEQUENCES),
    planner: await client.query(PLANNER_FIGURES),
  };
}

/**
 * Brings the current schema back to `snapshot`: true when done; false when its definition differs
 * in a way only a new migration undoes (or this user cannot write the system catalogs).
 */
export async function resetToMigrated(client: SqlClient, snapshot: MigratedSnapshot): Promise<boolean> {
  try {
    return await client.transaction(async (tx) => {
      // What a test added: dropped, tables first (their indexes go with them).
      const known = new Set(snapshot.relations);
      const added = (await tx.query<{ kind: string; name: string }>(RELATIONS)).filter(
        (relation) => !known.has(`${relation.kind}:${relation.name}`),
      );
      const kinds = Object.keys(DROPPED_AS);
      added.sort((a, b) => kinds.indexOf(a.kind) - kinds.indexOf(b.kind));
      for (const { kind, name } of added) {
        await tx.query(`DROP ${DROPPED_AS[kind]} IF EXISTS ${quote(name)} CASCADE`);
      }
      const [definition] = await tx.query<{ digest: string }>(DEFINITION_DIGEST);
      if (definition?.digest !== snapshot.definition) return false;

      const sizes = new Map((await tx.query<{ name: string; bytes: number }>(TABLES)).map((t) => [t.name, t.bytes]));
      const written: string[] = [];
      for (const table of snapshot.tables) {
        const changed =
          sizes.get(table.name) !== table.bytes ||
          (table.digest !== null && (await rowsDigest(tx, table.name)) !== table.digest);
        if (changed) written.push(table.name);
      }
      if (written.length > 0) {
        await tx.query(`TRUNCATE ${written.map(quote).join(", ")} CASCADE`);
        // CASCADE may have emptied a table that refers to one of them: its rows are checked again below.
        for (const table of snapshot.tables) {
          if (table.rows === null || (await rowsDigest(tx, table.name)) === table.digest) continue;
          if (!written.includes(table.name)) await tx.query(`TRUNCATE ${quote(table.name)} CASCADE`);
          const columns = table.columns.map(quote).join(", ");
          await tx.query(
            `INSERT INTO ${quote(table.name)} (${columns}) OVERRIDING SYSTEM VALUE
             SELECT ${columns} FROM json_populate_recordset(NULL::${quote(table.name)}, $1::text::json)`,
            [table.rows],
          );
        }
      }

      const sequences = new Map(
        (await tx.query<MigratedSnapshot["sequences"][number]>(SEQUENCES)).map((s) => [s.name, s]),
      );
      for (const sequence of snapshot.sequences) {
        if (sequences.get(sequence.name)?.lastValue === sequence.lastValue) continue;
        // Never used (no last value): its next value is its start.
        await tx.query("SELECT setval($1::regclass, $2::bigint, $3::boolean)", [
          quote(sequence.name),
          sequence.lastValue ?? sequence.startValue,
          sequence.lastValue !== null,
        ]);
      }

      // The planner's view of the schema: no statistics (the migration left none), and each
      // relation's figures as the migration left them.
      await tx.query(
        `DELETE FROM pg_statistic WHERE starelid IN
           (SELECT oid FROM pg_class WHERE relnamespace = current_schema()::regnamespace)`,
      );
      await tx.query(
        `UPDATE pg_class c SET relpages = f.relpages, reltuples = f.reltuples, relallvisible = f.relallvisible
           FROM json_to_recordset($1::text::json) AS f(name text, relpages integer, reltuples real, relallvisible integer)
          WHERE c.relnamespace = current_schema()::regnamespace AND c.relname = f.name
            AND (c.relpages, c.reltuples, c.relallvisible) IS DISTINCT FROM (f.relpages, f.reltuples, f.relallvisible)`,
        [JSON.stringify(snapshot.planner)],
      );
      return true;
    });
  } catch (error) {
    // Not a superuser: the caller migrates a new database instead.
    if ((error as { code?: string }).code === "42501") return false;
    throw error;
  }
}
