import { type PGlite, parse, protocol, type Transaction } from "@electric-sql/pglite";

type BackendMessage = Awaited<ReturnType<PGlite["execProtocolStream"]>>[number];

/** A statement PostgreSQL holds under `name`, the types of its parameters, and the schema generation it was prepared in. */
interface Prepared {
  name: string;
  parameterTypes: number[];
  generation: number;
}

/** Names statements uniquely in the process, so that two of these on one database never take the same. */
let statementsMade = 0;

/** Statements that PostgreSQL plans: the ones worth preparing. The others (SET, SAVEPOINT, DDL, ...) run unnamed. */
const PLANNED = /^\s*(SELECT|INSERT|UPDATE|DELETE|WITH|VALUES)\b/i;
/**
 * Statements that may change a table's columns: a statement prepared before one is prepared again,
 * since PostgreSQL refuses to run one whose result's columns changed ("cached plan must not change
 * result type"), and inside a transaction that error would end it.
 */
const SCHEMA_CHANGE = /^\s*(CREATE|ALTER|DROP|DO|TRUNCATE)\b/i;

/**
 * Statements run on PGlite as named prepared statements, each prepared the first time its text is
 * run, so that PostgreSQL parses it once and plans it as a server's pool does (custom plans, then
 * the generic one when it costs no more: the same statements run prepared on a server, postgres.js
 * `prepare: true`). PGlite's own `query` sends every statement unnamed: parsed and planned each
 * time, which on the eval catalogue was 1.31 ms of the semantic search's 2.04 and 4.5 of a hybrid
 * one's 8.4 (timed against an EXPLAIN of each, README "The whole request"). Built from the protocol
 * messages PGlite exports, as its `query` is; `capacity` statements are kept, the least recently
 * run closed first.
 *
 * `run` must be called holding PGlite's query lock (PGlite.runExclusive), and, outside a
 * transaction, its transaction lock too (`query`, below).
 */
export class PreparedStatements {
  private readonly prepared = new Map<string, Prepared>();
  private generation = 0;

  constructor(
    private readonly db: PGlite,
    private readonly capacity = 256,
  ) {}

  /**
   * Rows of `text` run with `params` (serialized by PGlite's serializers for their types) through
   * `target` (the database, or a transaction of it that `text` runs in): prepared when PostgreSQL
   * plans it, unnamed otherwise.
   */
  async query<T>(target: PGlite | Transaction, text: string, params: readonly unknown[]): Promise<T[]> {
    if (!PLANNED.test(text)) {
      if (SCHEMA_CHANGE.test(text)) this.generation++;
      return (await target.query<T>(text, [...params])).rows;
    }
    const run = () => this.db.runExclusive(() => this.run<T>(text, params));
    // In a transaction, PGlite's transaction lock is the transaction's already.
    if (target !== this.db) return run();
    const rows = await this.db._runExclusiveTransaction(run);
    await this.db.syncToFs();
    return rows;
  }

  private async run<T>(text: string, params: readonly unknown[]): Promise<T[]> {
    let messages: BackendMessage[];
    try {
      let statement = this.prepared.get(text);
      if (statement?.generation !== this.generation) {
        if (statement) await this.forget(text);
        statement = await this.prepare(text);
      }
      // Most recently run last: the first one is the next to close.
      this.prepared.delete(text);
      this.prepared.set(text, statement);
      const values = params.map((param, i) => {
        if (param === null || param === undefined) return null;
        const serialize = this.db.serializers[statement.parameterTypes[i] ?? 0];
        return serialize ? serialize(param) : String(param);
      });
      // One call into PGlite for the four messages (0.1 to 0.2 ms less a search than four calls).
      messages = await this.send(
        Buffer.concat([
          protocol.serialize.bind({ statement: statement.name, values }),
          protocol.serialize.describe({ type: "P" }),
          protocol.serialize.execute({}),
          protocol.serialize.sync(),
        ]),
      );
    } catch (error) {
      // A failed Parse or Describe is followed by nothing: end the exchange (after a failed batch, one more Sync does nothing).
      await this.send(protocol.serialize.sync());
      throw error;
    }
    return (parse.parseResults(messages, this.db.parsers)[0]?.rows ?? []) as T[];
  }

  private async prepare(text: string): Promise<Prepared> {
    if (this.prepared.size >= this.capacity) {
      const [oldest] = this.prepared.keys();
      if (oldest !== undefined) await this.forget(oldest);
    }
    const name = `sku_search_${++statementsMade}`;
    await this.send(protocol.serialize.parse({ name, text }));
    const parameterTypes = parse.parseDescribeStatementResults(
      await this.send(protocol.serialize.describe({ type: "S", name })),
    );
    return { name, parameterTypes, generation: this.generation };
  }

  private async forget(text: string): Promise<void> {
    const statement = this.prepared.get(text);
    this.prepared.delete(text);
    if (statement) await this.send(protocol.serialize.close({ type: "S", name: statement.name }));
  }

  private send(message: Uint8Array): Promise<BackendMessage[]> {
    return this.db.execProtocolStream(message, { syncToFs: false });
  }
}
